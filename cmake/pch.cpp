// The object the layers' shared precompiled header is built with (CMakeLists.txt). It defines
// nothing.
