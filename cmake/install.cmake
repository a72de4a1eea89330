# `cmake --install`: the C API's header, libtoroid.so (with its SONAME link), the tools, a CMake
# package (find_package(toroid) -> toroid::toroid) and a pkg-config file (toroid.pc).
include(CMakePackageConfigHelpers)

install(TARGETS toroid EXPORT toroidTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/toroid/c_api.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/toroid)
install(TARGETS toroidc toroid-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/toroid)

set(toroid_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/toroid)
install(EXPORT toroidTargets NAMESPACE toroid:: DESTINATION ${toroid_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/toroidConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/toroidConfig.cmake INSTALL_DESTINATION ${toroid_cmake_dir})
# Before 1.0 a minor version may change the ABI: a request for 0.2 takes 0.2.x only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/toroidConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/toroidConfig.cmake ${PROJECT_BINARY_DIR}/toroidConfigVersion.cmake
        DESTINATION ${toroid_cmake_dir})

# Relocatable: the prefix is found from the .pc file's own place (pkg-config's pcfiledir), so
# `cmake --install --prefix DIR` works for any DIR.
file(RELATIVE_PATH toroid_pc_to_prefix /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" toroid_pc_to_prefix "${toroid_pc_to_prefix}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/toroid.pc.in ${PROJECT_BINARY_DIR}/toroid.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/toroid.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
