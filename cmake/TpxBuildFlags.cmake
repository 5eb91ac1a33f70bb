# SPDX-License-Identifier: Apache-2.0
# cmake/TpxBuildFlags.cmake - INTERFACE targets for warnings (tpx_build_flags), sanitizers
# (tpx_sanitize, kept separate so black-box tests can skip it) and hardened code generation
# (tpx_harden, part of tpx_build_flags so every target gets it).

# TPX_HARDEN: stack protector, _FORTIFY_SOURCE=3, PIE and full RELRO (docs/security.md). On by
# default for optimised builds without sanitizers, which is the release preset and the Dockerfile.
# _FORTIFY_SOURCE needs -O1 or more (glibc warns at -O0, an error under -Werror), so Debug never
# gets it; and it replaces memcpy, snprintf, ... with __*_chk versions that ASan/TSan do not
# intercept, so hardening and a sanitizer exclude each other.
# The default is taken at the first configure of a build tree, like any option().
set(_tpx_harden_default OFF)
if(CMAKE_BUILD_TYPE MATCHES "^(Release|RelWithDebInfo|MinSizeRel)$" AND NOT TPX_SANITIZE)
  set(_tpx_harden_default ON)
endif()
option(TPX_HARDEN "build with -fstack-protector-strong, _FORTIFY_SOURCE=3, PIE, full RELRO"
       ${_tpx_harden_default})
if(TPX_HARDEN AND TPX_SANITIZE)
  message(FATAL_ERROR "TPX_HARDEN and TPX_SANITIZE=${TPX_SANITIZE} exclude each other "
                      "(_FORTIFY_SOURCE hides calls from the sanitizer); turn one off")
endif()

add_library(tpx_harden INTERFACE)
if(TPX_HARDEN)
  # -U first: some toolchains predefine _FORTIFY_SOURCE=2, and a redefinition is a warning.
  target_compile_options(tpx_harden INTERFACE -fstack-protector-strong -fPIE
    $<$<NOT:$<CONFIG:Debug>>:-U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3>)
  target_link_options(tpx_harden INTERFACE
    $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-pie>
    $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:LINKER:-z,relro,-z,now>)
endif()

add_library(tpx_build_flags INTERFACE)
target_compile_features(tpx_build_flags INTERFACE c_std_11)
target_compile_definitions(tpx_build_flags INTERFACE _GNU_SOURCE)
target_compile_options(tpx_build_flags INTERFACE -Wall -Wextra -Wshadow -Wformat=2
  -Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings -Wvla
  $<$<BOOL:${TPX_WERROR}>:-Werror>)
target_link_libraries(tpx_build_flags INTERFACE tpx_harden)

add_library(tpx_sanitize INTERFACE)
if(TPX_SANITIZE)
  target_compile_options(tpx_sanitize INTERFACE -fsanitize=${TPX_SANITIZE} -fno-omit-frame-pointer)
  target_link_options(tpx_sanitize INTERFACE -fsanitize=${TPX_SANITIZE})
endif()
