// The program the test binaries' shared precompiled header is built with (CMakeLists.txt): an
// executable, so that the header has their flags. It does nothing.
int main() { return 0; }
