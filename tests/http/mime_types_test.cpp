#include <tarry/http/mime_types.hpp>

#include <gtest/gtest.h>

namespace tarry::http::test {
namespace {

TEST(MimeTypesTest, CommonWebAssets) {
    EXPECT_EQ(mime_type("a.avif"), "image/avif");
    EXPECT_EQ(mime_type("a.woff"), "font/woff");
    EXPECT_EQ(mime_type("a.mp4"), "video/mp4");
    EXPECT_EQ(mime_type("a.webm"), "video/webm");
    EXPECT_EQ(mime_type("site.webmanifest"), "application/manifest+json");
    EXPECT_EQ(mime_type("a.csv"), "text/csv; charset=utf-8");
    EXPECT_EQ(mime_type("A.MP4"), "video/mp4");
    EXPECT_EQ(mime_type("a.toolongextension"), "application/octet-stream");
}

} // namespace
} // namespace tarry::http::test
