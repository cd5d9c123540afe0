# lrpc_generate(<target> <schema.capnp>... [SKIP_UNSUPPORTED] [IMPORT_DIRS <dir>...])
#
# Runs capnpc-lrpc on each schema at build time and compiles the stubs into <target>:
#   * outputs go to ${CMAKE_CURRENT_BINARY_DIR}/lrpc_gen/<target>/<name>.lrpc.{h,cc}, named after
#     the schema's base name; that directory is added to <target>'s include path (PUBLIC), so
#     consumers write `#include "paper.lrpc.h"`;
#   * a schema is regenerated when it, any other schema of the same call, idl/lrpc.capnp or the
#     generator changes;
#   * capnp gets -I for idl/ (so `import "/lrpc.capnp"` works), for each schema's own directory
#     and for IMPORT_DIRS; a schema that imports another one whose types it uses must have that
#     one generated too (same call, or a target it links), since the stub includes its header;
#   * <target> links lrpc::runtime;
#   * SKIP_UNSUPPORTED runs the generator with LRPC_SKIP_UNSUPPORTED=1: an interface that uses
#     something lrpc does not support is left out (a comment in the header, a warning) instead of
#     failing the build.
# capnp runs in the schema's directory so that error messages name it as written, with lines.
# The installed package (cmake/lrpcConfig.cmake.in) sets LRPC_IDL_DIR and LRPC_CAPNPC_LRPC
# (the imported lrpc::capnpc-lrpc) before including this file; in the tree they default to
# idl/ and the capnpc-lrpc target.
if(NOT DEFINED LRPC_IDL_DIR)
  set(LRPC_IDL_DIR "${CMAKE_CURRENT_LIST_DIR}/../idl")
endif()
get_filename_component(LRPC_IDL_DIR "${LRPC_IDL_DIR}" ABSOLUTE)
set(LRPC_IDL_DIR "${LRPC_IDL_DIR}" CACHE INTERNAL "idl/ with lrpc.capnp")
if(NOT DEFINED LRPC_CAPNPC_LRPC)
  set(LRPC_CAPNPC_LRPC capnpc-lrpc CACHE INTERNAL "the capnpc-lrpc target")
endif()

function(lrpc_generate target)
  cmake_parse_arguments(G "SKIP_UNSUPPORTED" "" "IMPORT_DIRS" ${ARGN})
  set(env "")
  if(G_SKIP_UNSUPPORTED)
    set(env "${CMAKE_COMMAND}" -E env LRPC_SKIP_UNSUPPORTED=1)
  endif()
  set(outdir "${CMAKE_CURRENT_BINARY_DIR}/lrpc_gen/${target}")
  file(MAKE_DIRECTORY "${outdir}")
  set(includes "-I${LRPC_IDL_DIR}")
  set(schemas "")
  foreach(schema IN LISTS G_UNPARSED_ARGUMENTS)
    get_filename_component(abs "${schema}" ABSOLUTE)
    get_filename_component(dir "${abs}" DIRECTORY)
    list(APPEND schemas "${abs}")
    list(APPEND includes "-I${dir}")
  endforeach()
  foreach(dir IN LISTS G_IMPORT_DIRS)
    get_filename_component(abs "${dir}" ABSOLUTE)
    list(APPEND includes "-I${abs}")
  endforeach()
  list(REMOVE_DUPLICATES includes)
  foreach(abs IN LISTS schemas)
    get_filename_component(dir "${abs}" DIRECTORY)
    get_filename_component(file "${abs}" NAME)
    get_filename_component(name "${abs}" NAME_WE)
    add_custom_command(
      OUTPUT "${outdir}/${name}.lrpc.h" "${outdir}/${name}.lrpc.cc"
      COMMAND ${env} "${CAPNP_EXECUTABLE}" compile ${includes} "--src-prefix=${dir}"
              "-o$<TARGET_FILE:${LRPC_CAPNPC_LRPC}>:${outdir}" "${file}"
      WORKING_DIRECTORY "${dir}"
      DEPENDS ${schemas} ${LRPC_CAPNPC_LRPC} "${LRPC_IDL_DIR}/lrpc.capnp"
      COMMENT "capnpc-lrpc ${file}"
      VERBATIM)
    target_sources(${target} PRIVATE "${outdir}/${name}.lrpc.h" "${outdir}/${name}.lrpc.cc")
  endforeach()
  target_include_directories(${target} PUBLIC "${outdir}")
  target_link_libraries(${target} PUBLIC lrpc::runtime)
endfunction()
