# Installing lrpc for other projects: `cmake --install <build> --prefix <prefix>` puts
#   <prefix>/include/lrpc/runtime/*.h, include/lrpc/transport/*.h   the headers, repo-rooted, so
#       generated code's `#include "runtime/contract.h"` works with -I<prefix>/include/lrpc
#   <prefix>/lib/liblrpc_runtime.a, liblrpc_transport.a, liblrpc_secure.a
#   <prefix>/bin/capnpc-lrpc, bin/lrpc                              the plugin and the operator tool
#   <prefix>/share/lrpc/idl/lrpc.capnp                              `import "/lrpc.capnp"`
#   <prefix>/lib/cmake/lrpc/                                        find_package(lrpc CONFIG):
#       lrpc::runtime, lrpc::transport, lrpc::secure, lrpc::capnpc-lrpc and lrpc_generate()
#   <prefix>/lib/pkgconfig/lrpc.pc
# Included last by the top-level CMakeLists.txt, so every target below already exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The operator tool sits with the top layer: it uses both the runtime and the transport.
add_subdirectory(${PROJECT_SOURCE_DIR}/transport/cli ${PROJECT_BINARY_DIR}/transport/cli)

set(LRPC_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/lrpc")
set(LRPC_INSTALL_IDLDIR "${CMAKE_INSTALL_DATADIR}/lrpc/idl")
set(LRPC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/lrpc")

# In the tree every include is rooted at the repository by the top-level include_directories();
# installed, the same root is <prefix>/include/lrpc and the targets carry it to their users.
foreach(lib IN ITEMS lrpc_runtime lrpc_transport lrpc_secure)
  target_include_directories(${lib} INTERFACE
    "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>"
    "$<INSTALL_INTERFACE:${LRPC_INSTALL_INCLUDEDIR}>")
endforeach()
set_target_properties(lrpc_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(lrpc_transport PROPERTIES EXPORT_NAME transport)
set_target_properties(lrpc_secure PROPERTIES EXPORT_NAME secure)
set_target_properties(capnpc-lrpc PROPERTIES EXPORT_NAME capnpc-lrpc)

install(TARGETS lrpc_runtime lrpc_transport lrpc_secure capnpc-lrpc
  EXPORT lrpcTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS lrpc RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Every header of both layers: the public ones include internal ones (a generated source file
# includes stub_support.h, which pulls in local_call.h; client.h pulls in endpoint.h, ...), so a
# subset would not compile.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/ DESTINATION ${LRPC_INSTALL_INCLUDEDIR}/runtime
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/transport/ DESTINATION ${LRPC_INSTALL_INCLUDEDIR}/transport
  FILES_MATCHING PATTERN "*.h" PATTERN "cli" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/idl/lrpc.capnp DESTINATION ${LRPC_INSTALL_IDLDIR})

install(EXPORT lrpcTargets NAMESPACE lrpc:: DESTINATION ${LRPC_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/lrpcConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lrpcConfig.cmake
  INSTALL_DESTINATION ${LRPC_INSTALL_CMAKEDIR}
  PATH_VARS LRPC_INSTALL_IDLDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lrpcConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/lrpcConfig.cmake
  ${PROJECT_BINARY_DIR}/lrpcConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/stubgen/lrpc_generate.cmake
  DESTINATION ${LRPC_INSTALL_CMAKEDIR})

# The .pc file finds the prefix from its own place (relocatable), whatever the libdir is.
file(RELATIVE_PATH LRPC_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${CMAKE_CURRENT_LIST_DIR}/lrpc.pc.in ${PROJECT_BINARY_DIR}/lrpc.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lrpc.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
# tests/install and tests/cli are picked up by tests/CMakeLists.txt like every test folder.
