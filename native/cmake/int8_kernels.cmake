# The int8 GEMM (src/gemm_int8): its core files join the engine's, and each
# micro-kernel family is an object library compiled for its ISA only, as the
# fp32 families are.  Included by CMakeLists.txt after the fp32 families, in
# its scope: it appends to CORE_SRCS and UKERNEL_TARGETS.
function(acl_int8_family family flags)
  file(GLOB srcs CONFIGURE_DEPENDS
       ${CMAKE_CURRENT_SOURCE_DIR}/src/gemm_int8/${ACL_ARCH}/*-${family}.c)
  add_library(ukernels_int8_${family} OBJECT ${srcs})
  target_include_directories(ukernels_int8_${family} PRIVATE src/gemm_int8)
  target_compile_options(ukernels_int8_${family} PRIVATE ${ACL_WARNINGS} ${flags})
  set(UKERNEL_TARGETS ${UKERNEL_TARGETS} ukernels_int8_${family} PARENT_SCOPE)
endfunction()

if(ACL_ARCH STREQUAL "x86")
  acl_int8_family(avx512vnni "-mavx512f;-mavx512vnni")
  acl_int8_family(avx2 "-mavx2")
else()
  acl_int8_family(neon "")
  # Only this family: the registry runs it on cores whose HWCAP has asimddp.
  acl_int8_family(neondot "-march=armv8.2-a+dotprod")
endif()

file(GLOB INT8_CORE_SRCS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/gemm_int8/*.c)
list(APPEND CORE_SRCS ${INT8_CORE_SRCS})
