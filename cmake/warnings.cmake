# Project-wide warning and sanitizer flags, applied through air_set_warnings(target).
function(air_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(AIR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# A UBSan report stops the program (non-zero exit), so a test cannot pass over undefined behaviour.
# With clang the code is also instrumented for libFuzzer's coverage (tests/fuzz links the fuzzer itself).
if(AIR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
