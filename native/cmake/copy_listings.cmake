# Run by the ukernels_asm target (cmake -P): copies each micro-kernel's -E or -S
# output in OBJECTS, which CMake names <kernel>.c.o, to DEST/<kernel>.EXT.
foreach(object IN LISTS OBJECTS)
  get_filename_component(kernel "${object}" NAME_WE)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${object}" "${DEST}/${kernel}.${EXT}"
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "cannot copy ${object} to ${DEST}/${kernel}.${EXT}")
  endif()
endforeach()
