# SPDX-License-Identifier: Apache-2.0
# cmake/TpxBuildFlags.cmake - INTERFACE targets for warnings (tpx_build_flags) and sanitizers
# (tpx_sanitize), kept separate so black-box tests can skip the sanitizer.
add_library(tpx_build_flags INTERFACE)
target_compile_features(tpx_build_flags INTERFACE c_std_11)
target_compile_definitions(tpx_build_flags INTERFACE _GNU_SOURCE)
target_compile_options(tpx_build_flags INTERFACE -Wall -Wextra -Wshadow -Wformat=2
  -Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings -Wvla
  $<$<BOOL:${TPX_WERROR}>:-Werror>)

add_library(tpx_sanitize INTERFACE)
if(TPX_SANITIZE)
  target_compile_options(tpx_sanitize INTERFACE -fsanitize=${TPX_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(tpx_sanitize INTERFACE -fsanitize=${TPX_SANITIZE})
endif()
