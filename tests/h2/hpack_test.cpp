#include <tarry/h2/hpack_decoder.hpp>
#include <tarry/h2/hpack_encoder.hpp>
#include <tarry/h2/huffman.hpp>
#include <tarry/h2/static_table.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace h2 = tarry::h2;
using h2::decode_status;

namespace {

using fields = std::vector<std::pair<std::string, std::string>>;

std::string unhex(std::string_view hex) {
    std::string out;
    int high = -1;
    for (char c : hex) {
        int v = -1;
        if (c >= '0' && c <= '9') v = c - '0';
        if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        if (v < 0) continue;
        if (high < 0) {
            high = v;
        } else {
            out.push_back(static_cast<char>(high * 16 + v));
            high = -1;
        }
    }
    return out;
}

std::span<const std::uint8_t> bytes(const std::string& s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

struct decoded {
    decode_status status;
    fields list;
};

decoded decode(h2::hpack_decoder& d, const std::string& block, h2::decoder_limits limits = {}) {
    std::string scratch;
    decoded out;
    out.status =
        d.decode(bytes(block), scratch, limits,
                 [&](std::string_view n, std::string_view v) { out.list.emplace_back(n, v); });
    return out;
}

decoded decode_hex(h2::hpack_decoder& d, std::string_view hex) {
    return decode(d, unhex(hex));
}

/// The dynamic table, newest first, as appendix C prints it.
fields table_of(const h2::hpack_decoder& d) {
    fields out;
    for (std::size_t i = 0; i < d.table().count(); ++i) {
        const auto f = d.table().at(i);
        out.emplace_back(f.name, f.value);
    }
    return out;
}

decode_status status_of(std::string_view hex, std::uint32_t table_size = 4096) {
    h2::hpack_decoder d(table_size);
    return decode_hex(d, hex).status;
}

} // namespace

TEST(HpackTest, C2FieldRepresentations) {
    {
        h2::hpack_decoder d;
        const auto r = decode_hex(d, "400a637573746f6d2d6b65790d637573746f6d2d686561646572");
        EXPECT_EQ(r.status, decode_status::ok);
        EXPECT_EQ(r.list, (fields{{"custom-key", "custom-header"}}));
        EXPECT_EQ(table_of(d), (fields{{"custom-key", "custom-header"}}));
        EXPECT_EQ(d.table().size(), 55U);
    }
    {
        h2::hpack_decoder d;
        EXPECT_EQ(decode_hex(d, "040c2f73616d706c652f70617468").list,
                  (fields{{":path", "/sample/path"}}));
        EXPECT_EQ(d.table().count(), 0U);
    }
    {
        h2::hpack_decoder d;
        EXPECT_EQ(decode_hex(d, "100870617373776f726406736563726574").list,
                  (fields{{"password", "secret"}}));
        EXPECT_EQ(d.table().count(), 0U);
    }
    {
        h2::hpack_decoder d;
        EXPECT_EQ(decode_hex(d, "82").list, (fields{{":method", "GET"}}));
        EXPECT_EQ(d.table().count(), 0U);
        EXPECT_EQ(d.table().allocated(), 0U);
    }
}

namespace {

const fields request1{
    {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}};
const fields request2{{":method", "GET"},
                      {":scheme", "http"},
                      {":path", "/"},
                      {":authority", "www.example.com"},
                      {"cache-control", "no-cache"}};
const fields request3{{":method", "GET"},
                      {":scheme", "https"},
                      {":path", "/index.html"},
                      {":authority", "www.example.com"},
                      {"custom-key", "custom-value"}};

void requests(const std::string_view (&hex)[3]) {
    h2::hpack_decoder d;
    auto r = decode_hex(d, hex[0]);
    EXPECT_EQ(r.status, decode_status::ok);
    EXPECT_EQ(r.list, request1);
    EXPECT_EQ(table_of(d), (fields{{":authority", "www.example.com"}}));
    EXPECT_EQ(d.table().size(), 57U);

    r = decode_hex(d, hex[1]);
    EXPECT_EQ(r.list, request2);
    EXPECT_EQ(table_of(d),
              (fields{{"cache-control", "no-cache"}, {":authority", "www.example.com"}}));
    EXPECT_EQ(d.table().size(), 110U);

    r = decode_hex(d, hex[2]);
    EXPECT_EQ(r.list, request3);
    EXPECT_EQ(table_of(d), (fields{{"custom-key", "custom-value"},
                                   {"cache-control", "no-cache"},
                                   {":authority", "www.example.com"}}));
    EXPECT_EQ(d.table().size(), 164U);
}

const std::string date1 = "Mon, 21 Oct 2013 20:13:21 GMT";
const std::string date2 = "Mon, 21 Oct 2013 20:13:22 GMT";
const std::string location = "https://www.example.com";
const std::string cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";

void responses(const std::string_view (&hex)[3]) {
    h2::hpack_decoder d(256);
    auto r = decode_hex(d, hex[0]);
    EXPECT_EQ(r.status, decode_status::ok);
    EXPECT_EQ(r.list, (fields{{":status", "302"},
                              {"cache-control", "private"},
                              {"date", date1},
                              {"location", location}}));
    EXPECT_EQ(table_of(d), (fields{{"location", location},
                                   {"date", date1},
                                   {"cache-control", "private"},
                                   {":status", "302"}}));
    EXPECT_EQ(d.table().size(), 222U);

    r = decode_hex(d, hex[1]);
    EXPECT_EQ(r.list, (fields{{":status", "307"},
                              {"cache-control", "private"},
                              {"date", date1},
                              {"location", location}}));
    EXPECT_EQ(table_of(d), (fields{{":status", "307"},
                                   {"location", location},
                                   {"date", date1},
                                   {"cache-control", "private"}}));
    EXPECT_EQ(d.table().size(), 222U);

    r = decode_hex(d, hex[2]);
    EXPECT_EQ(r.list, (fields{{":status", "200"},
                              {"cache-control", "private"},
                              {"date", date2},
                              {"location", location},
                              {"content-encoding", "gzip"},
                              {"set-cookie", cookie}}));
    EXPECT_EQ(table_of(d),
              (fields{{"set-cookie", cookie}, {"content-encoding", "gzip"}, {"date", date2}}));
    EXPECT_EQ(d.table().size(), 215U);
    EXPECT_LE(d.table().allocated(), 256U + 8 * sizeof(std::uint64_t));
}

} // namespace

TEST(HpackTest, C3RequestsWithoutHuffman) {
    requests({"8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
              "8286 84be 5808 6e6f 2d63 6163 6865",
              "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65"});
}

TEST(HpackTest, C4RequestsWithHuffman) {
    requests({"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", "8286 84be 5886 a8eb 1064 9cbf",
              "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf"});
}

TEST(HpackTest, C5ResponsesWithoutHuffman) {
    responses({"4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 "
               "2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 "
               "6c65 2e63 6f6d",
               "4803 3330 37c1 c0bf",
               "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d "
               "54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 "
               "5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e "
               "3d31"});
}

TEST(HpackTest, C6ResponsesWithHuffman) {
    responses({"4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 "
               "2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
               "4883 640e ffc1 c0bf",
               "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab "
               "77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f "
               "9587 3160 65c0 03ed 4ee5 b106 3d50 07"});
}

TEST(HpackTest, IntegersAsAppendixC1EncodesThem) {
    std::string out;
    h2::encode_integer(out, 10, 5, 0);
    EXPECT_EQ(out, unhex("0a"));
    out.clear();
    h2::encode_integer(out, 1337, 5, 0);
    EXPECT_EQ(out, unhex("1f9a0a"));
    out.clear();
    h2::encode_integer(out, 42, 8, 0);
    EXPECT_EQ(out, unhex("2a"));
    out.clear();
    h2::encode_integer(out, 31, 5, 0xe0); // exactly the prefix: a zero continuation byte
    EXPECT_EQ(out, unhex("ff00"));
    out.clear();
    h2::encode_integer(out, 0xffffffff, 7, 0x80);
    EXPECT_EQ(out, unhex("ff80ffffff0f"));
}

TEST(HpackTest, IntegerEdgesInTheDecoder) {
    // Index 127 + 1 = 128, 16384... are past any table: the integer itself is read fine.
    EXPECT_EQ(status_of("ff00"), decode_status::compression_error);           // index 127
    EXPECT_EQ(status_of("fe"), decode_status::compression_error);             // index 126
    EXPECT_EQ(status_of("ff80"), decode_status::compression_error);           // truncated
    EXPECT_EQ(status_of("ff"), decode_status::compression_error);             // truncated
    EXPECT_EQ(status_of("ff80ffffff0f"), decode_status::compression_error);   // 2^32-1: no entry
    EXPECT_EQ(status_of("ff81ffffff0f"), decode_status::compression_error);   // 2^32: overflow
    EXPECT_EQ(status_of("ffffffffffff0f"), decode_status::compression_error); // too long
    EXPECT_EQ(status_of("ff8080808080800000"), decode_status::compression_error); // zeros
    // Multi-byte lengths that are fine: a 200-byte and a 20000-byte value.
    for (std::size_t n : {126, 127, 128, 200, 16383, 16384, 20000}) {
        std::string block;
        h2::encode_field(block, "x-long", std::string(n, '\x01')); // no Huffman: longer coded
        h2::hpack_decoder d;
        const auto r = decode(d, block, {1 << 20, 100});
        ASSERT_EQ(r.status, decode_status::ok) << n;
        EXPECT_EQ(r.list[0].second.size(), n);
    }
}

TEST(HpackTest, HuffmanCodesAreAppendixBs) {
    struct known {
        unsigned symbol;
        std::uint32_t bits;
        std::uint8_t length;
    };
    for (const known k :
         {known{0, 0x1ff8, 13}, known{1, 0x7fffd8, 23}, known{10, 0x3ffffffc, 30},
          known{' ', 0x14, 6}, known{'0', 0x0, 5}, known{'A', 0x21, 6}, known{'a', 0x3, 5},
          known{'~', 0x1ffd, 13}, known{127, 0xffffffc, 28}, known{128, 0xfffe6, 20},
          known{255, 0x3ffffee, 26}, known{256, 0x3fffffff, 30}}) {
        const auto c = h2::huffman::code_of(k.symbol);
        EXPECT_EQ(c.bits, k.bits) << k.symbol;
        EXPECT_EQ(c.length, k.length) << k.symbol;
    }
}

TEST(HpackTest, HuffmanRoundTripsEveryByte) {
    auto round_trip = [](const std::string& s) {
        std::string coded(h2::huffman::encoded_size(s), '\0');
        h2::huffman::encode(s, coded.data());
        std::string back(h2::huffman::max_decoded_size(coded.size()), '\0');
        const auto n = h2::huffman::decode(bytes(coded), back.data());
        EXPECT_GE(n, 0);
        back.resize(static_cast<std::size_t>(std::max<std::ptrdiff_t>(n, 0)));
        return back;
    };
    std::string all;
    for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        EXPECT_EQ(round_trip(one), one) << b;
        EXPECT_EQ(round_trip(one + one + one), one + one + one) << b;
        all.push_back(static_cast<char>(b));
    }
    EXPECT_EQ(round_trip(all), all);
    std::string reversed(all.rbegin(), all.rend());
    EXPECT_EQ(round_trip(reversed), reversed);
    EXPECT_EQ(round_trip(""), "");
    std::mt19937 random(7541);
    for (int i = 0; i < 500; ++i) {
        std::string s(std::uniform_int_distribution<std::size_t>(0, 64)(random), '\0');
        for (char& c : s)
            c = static_cast<char>(random());
        ASSERT_EQ(round_trip(s), s);
    }
}

TEST(HpackTest, HuffmanPaddingAndEos) {
    auto decodes = [](std::string_view hex) {
        const std::string in = unhex(hex);
        std::string out(h2::huffman::max_decoded_size(in.size()) + 1, '\0');
        return h2::huffman::decode(bytes(in), out.data());
    };
    EXPECT_EQ(decodes("1f"), 1);                          // 'a' (00011) and three ones
    EXPECT_EQ(decodes("18"), -1);                         // 'a' and three zeros: not EOS's bits
    EXPECT_EQ(decodes("1b"), -1);                         // 'a' and 011
    EXPECT_EQ(decodes("ff"), -1);                         // eight ones: padding longer than 7 bits
    EXPECT_EQ(decodes("1fff"), -1);                       // 'a' then 11 ones
    EXPECT_EQ(decodes("ffffffff"), -1);                   // EOS itself, then two ones
    EXPECT_EQ(decodes("fffffffc"), -1);                   // EOS followed by zeros
    EXPECT_EQ(decodes("f1e3c2e5f23a6ba0ab90f4ff"), 15);   // www.example.com
    EXPECT_EQ(decodes("f1e3c2e5f23a6ba0ab90f4ffff"), -1); // and 8 bits of padding more
    // In a block: the same errors are COMPRESSION_ERROR.
    EXPECT_EQ(status_of("0085f2b24a84ff8449509fff"), decode_status::compression_error);
    EXPECT_EQ(status_of("408118 8118"), decode_status::compression_error);
    EXPECT_EQ(status_of("40811f 811f"), decode_status::ok);
}

TEST(HpackTest, MalformedBlocks) {
    using enum decode_status;
    EXPECT_EQ(status_of("80"), compression_error);         // index 0
    EXPECT_EQ(status_of("be"), compression_error);         // 62, on an empty dynamic table
    EXPECT_EQ(status_of("7f00"), compression_error);       // literal, name index 63
    EXPECT_EQ(status_of("0f2f"), compression_error);       // literal without indexing, name 62
    EXPECT_EQ(status_of("040c2f73"), compression_error);   // value longer than the block
    EXPECT_EQ(status_of("0003616263"), compression_error); // name, then no value
    EXPECT_EQ(status_of("00"), compression_error);         // no name
    EXPECT_EQ(status_of("40"), compression_error);
    EXPECT_EQ(status_of("10ff"), compression_error);
    EXPECT_EQ(status_of("82 20"), compression_error);  // a size update after a field
    EXPECT_EQ(status_of("3fe21f"), compression_error); // 4097, above the limit
    EXPECT_EQ(status_of("3fe11f 82"), ok);             // 4096, the limit
    EXPECT_EQ(status_of(""), ok);
    // An entry referenced after it was evicted by a size update.
    h2::hpack_decoder d;
    EXPECT_EQ(decode_hex(d, "40016102 6231").status, ok); // a: b1
    EXPECT_EQ(decode_hex(d, "be").list, (fields{{"a", "b1"}}));
    EXPECT_EQ(decode_hex(d, "20 be").status, compression_error);
}

TEST(HpackTest, TableSizeUpdates) {
    h2::hpack_decoder d;
    ASSERT_EQ(decode(d, unhex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d")).status,
              decode_status::ok);
    EXPECT_GT(d.table().allocated(), 0U);
    // Two updates at the start are allowed (the lowest, then the final value, 4.2).
    EXPECT_EQ(decode_hex(d, "20 3f11 82").status, decode_status::ok);
    EXPECT_EQ(d.table().max_size(), 48U);
    EXPECT_EQ(d.table().count(), 0U);

    // The endpoint lowers SETTINGS_HEADER_TABLE_SIZE to 0 and the peer acknowledges it: the
    // table is freed at once, and the peer's next block must begin with an update.
    ASSERT_EQ(decode_hex(d, "3f11 4001610162").status, decode_status::ok);
    EXPECT_EQ(d.table().count(), 1U);
    d.set_max_table_size(0);
    EXPECT_EQ(d.table().count(), 0U);
    EXPECT_EQ(d.table().allocated(), 0U);
    {
        h2::hpack_decoder copy(4096);
        copy.set_max_table_size(0);
        EXPECT_EQ(decode_hex(copy, "82").status, decode_status::compression_error);
        h2::hpack_decoder empty(4096);
        empty.set_max_table_size(0);
        EXPECT_EQ(decode_hex(empty, "").status, decode_status::compression_error);
    }
    EXPECT_EQ(decode_hex(d, "21 82").status, decode_status::compression_error); // 1 > 0
    h2::hpack_decoder again(4096);
    again.set_max_table_size(0);
    EXPECT_EQ(decode_hex(again, "20 4001610162").status, decode_status::ok);
    EXPECT_EQ(again.table().count(), 0U); // a field larger than the table empties it
    EXPECT_EQ(again.table().allocated(), 0U);
    // Restored: SETTINGS_HEADER_TABLE_SIZE 4096 again, acknowledged; the peer raises it.
    again.set_max_table_size(4096);
    EXPECT_EQ(decode_hex(again, "82").status, decode_status::ok); // no update needed
    EXPECT_EQ(decode_hex(again, "3fe11f 4001610162").status, decode_status::ok);
    EXPECT_EQ(again.table().count(), 1U);
    // Raising the limit needs no update; lowering it below the table's maximum does.
    again.set_max_table_size(8192);
    EXPECT_EQ(decode_hex(again, "be").list, (fields{{"a", "b"}}));
    again.set_max_table_size(100);
    EXPECT_EQ(again.table().max_size(), 100U);
    EXPECT_EQ(decode_hex(again, "be").status, decode_status::compression_error);
}

TEST(HpackTest, LimitsStopTheFieldsButNotTheTable) {
    std::string block;
    for (int i = 0; i < 5; ++i) {
        block += unhex("40"); // with incremental indexing
        h2::encode_string(block, "x-field-" + std::to_string(i));
        h2::encode_string(block, "value");
    }
    {
        h2::hpack_decoder d;
        const auto r = decode(d, block, {16384, 3});
        EXPECT_EQ(r.status, decode_status::too_large);
        EXPECT_EQ(r.list.size(), 3U);
        EXPECT_EQ(d.table().count(), 5U); // in step with the peer's encoder
        EXPECT_EQ(decode_hex(d, "be").list, (fields{{"x-field-4", "value"}}));
    }
    {
        // Each field is 9 + 5 + 32 = 46 bytes: 2 fit in 100.
        h2::hpack_decoder d;
        const auto r = decode(d, block, {100, 100});
        EXPECT_EQ(r.status, decode_status::too_large);
        EXPECT_EQ(r.list.size(), 2U);
        EXPECT_EQ(d.table().count(), 5U);
        EXPECT_EQ(decode(d, block, {5 * 46, 5}).status, decode_status::ok);
    }
}

TEST(HpackTest, AnIndexedRequestUsesNoScratchAndNoNewTableMemory) {
    h2::hpack_decoder d;
    std::string scratch;
    const std::string first = unhex("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff");
    int n = 0;
    auto count = [&](std::string_view, std::string_view) { ++n; };
    ASSERT_EQ(d.decode(bytes(first), scratch, {}, count), decode_status::ok);
    const auto table_bytes = d.table().allocated();
    const auto scratch_bytes = scratch.capacity();
    const std::string again = unhex("8286 84be");
    for (int i = 0; i < 100; ++i)
        ASSERT_EQ(d.decode(bytes(again), scratch, {}, count), decode_status::ok);
    EXPECT_EQ(n, 404);
    EXPECT_EQ(d.table().allocated(), table_bytes);
    EXPECT_EQ(scratch.capacity(), scratch_bytes);
}

TEST(HpackTest, TheTableMatchesAModelUnderRandomInsertsAndResizes) {
    std::mt19937 random(34);
    h2::dynamic_table table(4096);
    std::deque<std::pair<std::string, std::string>> model; // newest first
    std::uint32_t max = 4096;
    auto model_size = [&] {
        std::size_t s = 0;
        for (const auto& [n, v] : model)
            s += n.size() + v.size() + 32;
        return s;
    };
    for (int step = 0; step < 20000; ++step) {
        const auto what = random() % 100;
        if (what < 2) {
            max = static_cast<std::uint32_t>(random() % 5000);
            table.set_max_size(max);
            while (model_size() > max)
                model.pop_back();
        } else {
            std::string name(random() % 40, 'n');
            std::string value(random() % (what < 10 ? 3000 : 200), 'v');
            for (char& c : name)
                c = static_cast<char>('a' + random() % 26);
            for (char& c : value)
                c = static_cast<char>('A' + random() % 26);
            table.insert(name, value);
            if (name.size() + value.size() + 32 > max) {
                model.clear();
            } else {
                model.emplace_front(name, value);
                while (model_size() > max)
                    model.pop_back();
            }
        }
        ASSERT_EQ(table.count(), model.size()) << step;
        ASSERT_EQ(table.size(), model_size()) << step;
        ASSERT_LE(table.allocated(), max + 8 * (max / 32 + 4)) << step; // bytes plus entries
        for (std::size_t i = 0; i < model.size(); ++i) {
            ASSERT_EQ(table.at(i).name, model[i].first) << step;
            ASSERT_EQ(table.at(i).value, model[i].second) << step;
        }
    }
}

TEST(HpackTest, EncoderUsesTheStaticTableAndNoState) {
    std::string block;
    h2::encode_status(block, 200);
    EXPECT_EQ(block, unhex("88"));
    block.clear();
    h2::encode_status(block, 302);
    EXPECT_EQ(block, unhex("08 82 6402")); // name 8 without indexing, Huffman "302"
    block.clear();
    h2::encode_field(block, ":method", "GET");
    h2::encode_field(block, "accept-encoding", "gzip, deflate");
    EXPECT_EQ(block, unhex("82 90"));
    block.clear();
    h2::encode_field(block, "content-type", "text/html"); // name 31 with 4-bit prefix: 0f 10
    EXPECT_EQ(block.substr(0, 2), unhex("0f10"));
    block.clear();
    h2::encode_field(block, "password", "secret", true);
    EXPECT_EQ(static_cast<std::uint8_t>(block[0]), 0x10);

    const fields response{{":status", "200"},       {"content-type", "text/html; charset=utf-8"},
                          {"content-length", "13"}, {"date", date1},
                          {"server", "tarry"},      {"location", location},
                          {"set-cookie", cookie},   {"x-custom", ""},
                          {":authority", ""},       {"x-binary", std::string("\0\xff\x80 ", 4)}};
    block.clear();
    for (const auto& [n, v] : response)
        h2::encode_field(block, n, v);
    h2::hpack_decoder d;
    const auto r = decode(d, block);
    EXPECT_EQ(r.status, decode_status::ok);
    EXPECT_EQ(r.list, response);
    EXPECT_EQ(d.table().count(), 0U); // nothing was indexed
    for (unsigned status = 100; status < 1000; ++status) {
        block.clear();
        h2::encode_status(block, status);
        h2::hpack_decoder fresh;
        EXPECT_EQ(decode(fresh, block).list, (fields{{":status", std::to_string(status)}}));
    }
}

TEST(HpackTest, StaticTableLookup) {
    EXPECT_EQ(h2::static_table[1].name, ":authority");
    EXPECT_EQ(h2::static_table[61].name, "www-authenticate");
    auto m = h2::find_static(":status", "404");
    EXPECT_EQ(m.index, 13);
    EXPECT_TRUE(m.value_matches);
    m = h2::find_static(":status", "302");
    EXPECT_EQ(m.index, 8);
    EXPECT_FALSE(m.value_matches);
    m = h2::find_static("x-nothing", "");
    EXPECT_EQ(m.index, 0);
    for (std::uint8_t i = 1; i <= h2::static_table_size; ++i) {
        const auto& f = h2::static_table[i];
        m = h2::find_static(f.name, f.value);
        EXPECT_EQ(m.index, i);
        EXPECT_TRUE(m.value_matches);
    }
}

TEST(HpackTest, EmptyNamesAndValuesInTheTable) {
    // An empty field takes 32 bytes of the table and none of its storage; a literal that names
    // it by index and is indexed in turn copies its (empty) name.
    h2::hpack_decoder d;
    const auto r = decode_hex(d, "400000 7e00 7f0001 62 be");
    EXPECT_EQ(r.status, decode_status::ok);
    EXPECT_EQ(r.list, (fields{{"", ""}, {"", ""}, {"", "b"}, {"", "b"}}));
    EXPECT_EQ(d.table().count(), 3U);
    EXPECT_EQ(d.table().size(), 97U);
}
