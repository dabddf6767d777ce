# cmake -DIN=openapi.json -DOUT=openapi_document.cc -P embed_openapi.cmake
# Writes OpenApiDocument() (server/corral_api/api.h) returning the file's bytes, as a raw
# string literal; fails if the file contains the literal's closing delimiter.
file(READ ${IN} content)
string(FIND "${content}" ")corral_openapi\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )corral_openapi\"")
endif()
file(WRITE ${OUT}.tmp
  "// Generated from server/corral_api/openapi.json by server/corral_api/embed_openapi.cmake: do not edit.\n"
  "#include \"server/corral_api/api.h\"\n\n"
  "namespace corral::server {\n\n"
  "std::string_view OpenApiDocument() {\n"
  "  static constexpr char kText[] = R\"corral_openapi(${content})corral_openapi\";\n"
  "  return {kText, sizeof kText - 1};\n"
  "}\n\n"
  "}  // namespace corral::server\n")
file(RENAME ${OUT}.tmp ${OUT})
