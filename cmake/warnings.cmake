# Project-wide warning and sanitizer flags, applied through air_set_warnings(target).
function(air_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(AIR_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(AIR_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
