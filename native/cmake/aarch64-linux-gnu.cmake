# Cross-compiles the engine for 64-bit Arm boards with Debian's
# gcc-aarch64-linux-gnu; binaries run on the board or under
# `qemu-aarch64 -L /usr/aarch64-linux-gnu`.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Board-specific tuning (e.g. -mcpu=cortex-a73.cortex-a53) comes from the board file.
set(ACL_CPU_FLAGS "" CACHE STRING "Extra -mcpu/-mtune flags for the target board")
set(CMAKE_C_FLAGS_INIT "${ACL_CPU_FLAGS}")
