// The source of tarry_test_pch, the target whose precompiled header (GoogleTest, Asio) every
// test binary reuses (tests/CMakeLists.txt). It holds nothing of its own.
