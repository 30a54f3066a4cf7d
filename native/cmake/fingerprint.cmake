# The engine's fingerprint: a hash of every native source and of the flags it
# is compiled with, so that a measurement taken with one build of the engine
# is never taken for one of another (a version string does not change with
# each kernel edit).  Run at build time (cmake -P) whenever a source or the
# flags file changes; writes the header only when the fingerprint changes, so
# that an unchanged engine is not recompiled.
#   -DSOURCE_DIR=native  -DFLAGS_FILE=<flags written at configure time>
#   -DHEADER=<header to write>  -DTEXT=<the same fingerprint, one line>
file(GLOB_RECURSE inputs RELATIVE ${SOURCE_DIR}
  ${SOURCE_DIR}/src/*.c ${SOURCE_DIR}/src/*.h ${SOURCE_DIR}/include/*.h
  ${SOURCE_DIR}/launcher/*.c ${SOURCE_DIR}/launcher/*.h)
list(SORT inputs)
file(READ ${FLAGS_FILE} digest_input)
foreach(input ${inputs})
  file(SHA256 ${SOURCE_DIR}/${input} hash)
  string(APPEND digest_input "${input} ${hash}\n")
endforeach()
string(SHA256 digest "${digest_input}")
string(SUBSTRING ${digest} 0 16 fingerprint)
file(CONFIGURE OUTPUT ${HEADER}
  CONTENT "#define ACL_ENGINE_FINGERPRINT \"${fingerprint}\"\n" @ONLY)
file(CONFIGURE OUTPUT ${TEXT} CONTENT "${fingerprint}\n" @ONLY)
