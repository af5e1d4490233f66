# Script mode: writes OUT, a C file defining `const unsigned char SYMBOL[]`
# with the bytes of IN and `const size_t SYMBOL_size`, so that a code object
# built here ships inside the test binary (the build folder is carried to the
# GPU machine, where paths differ).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" nhex)
math(EXPR size "${nhex} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN} by tests/gpu/embed_bin.cmake; do not edit. */\n"
     "#include <stddef.h>\n"
     "extern const unsigned char ${SYMBOL}[];\n"
     "extern const size_t ${SYMBOL}_size;\n"
     "const unsigned char ${SYMBOL}[] = {${bytes}};\n"
     "const size_t ${SYMBOL}_size = ${size};\n")
