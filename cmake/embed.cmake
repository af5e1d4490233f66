# qual_embed(OUT_C SYMBOL FILE...): generates OUT_C defining
# `const char SYMBOL[]` holding the concatenated text of the files, so kernel
# sources and preludes ship inside the binaries. VERBATIM keeps the list of
# files (a ";"-separated argument) one argument for the shell.
function(qual_embed out_c symbol)
  add_custom_command(
    OUTPUT ${out_c}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out_c} -DSYMBOL=${symbol}
            "-DFILES=${ARGN}" -P ${PROJECT_SOURCE_DIR}/cmake/embed_run.cmake
    DEPENDS ${ARGN} ${PROJECT_SOURCE_DIR}/cmake/embed_run.cmake
    COMMENT "Embedding ${symbol}"
    VERBATIM)
endfunction()
