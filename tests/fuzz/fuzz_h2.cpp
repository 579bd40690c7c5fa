// libFuzzer harness for the h2/ library: arbitrary bytes are a connection's frames after the
// preface, fed to frame_reader in reads of a size the input chooses, keeping only the tail it
// did not consume, as a connection will. Every HEADERS/CONTINUATION block goes through one
// hpack_decoder that lives as long as the connection (a SETTINGS frame's HEADER_TABLE_SIZE is
// taken as acknowledged at once, so table size changes are exercised too); each decoded list
// is encoded again with the stateless encoder and decoded by a fresh decoder, which must give
// it back exactly, and each block is written again as HEADERS and CONTINUATION frames and read
// back. It checks the reader's promises (a DATA frame's pieces are its payload without
// padding, first and last once each, nothing kept beyond a frame); the sanitizers check the rest.
//
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DTARRY_FUZZ=ON
//   cmake --build build-fuzz --target fuzz_h2
//   build-fuzz/tests/fuzz_h2 -max_total_time=60 tests/fuzz/corpus_h2
//
// Input: byte 0 is the size of the reads (0: all at once) and picks that of the rewritten
// frames, byte 1 the decoder's limits (fields: 1 + b % 64; list size: 64 * (1 + b)); the rest is
// the frames.
#include <tarry/h2/frame.hpp>
#include <tarry/h2/hpack_decoder.hpp>
#include <tarry/h2/hpack_encoder.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace h2 = tarry::h2;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

using field_list = std::vector<std::pair<std::string, std::string>>;

struct connection {
    h2::frame_reader reader;
    h2::hpack_decoder decoder;
    h2::decoder_limits limits;
    std::string scratch;
    std::string block; ///< the field block being gathered
    std::uint32_t split = 1;
    bool closed = false;
    // The DATA frame in progress.
    bool in_data = false;
    std::size_t data_bytes = 0;

    /// Written again as HEADERS and CONTINUATION frames of `split` bytes, the block reads back
    /// whole.
    void rewrite_block() const {
        std::string wire;
        h2::write_headers(wire, 1, block, true, split);
        h2::frame_reader again;
        h2::bytes in = h2::as_bytes(wire);
        std::string back;
        for (;;) {
            const auto r = again.read(in);
            in = in.subspan(r.consumed);
            if (r.what == h2::frame_reader::event::need_more) break;
            check(r.what == h2::frame_reader::event::frame && r.payload.size() <= split);
            back.append(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
        }
        check(in.empty() && back == block);
    }

    void decode_block() {
        rewrite_block();
        field_list fields;
        const auto status = decoder.decode(
            h2::as_bytes(block), scratch, limits,
            [&](std::string_view n, std::string_view v) { fields.emplace_back(n, v); });
        block.clear();
        if (status == h2::decode_status::compression_error) {
            closed = true;
            return;
        }
        check(fields.size() <= limits.max_fields);
        // Encoded again without a table, the list decodes to itself.
        std::string again;
        for (const auto& [n, v] : fields)
            h2::encode_field(again, n, v);
        h2::hpack_decoder fresh;
        std::string fresh_scratch;
        field_list back;
        check(fresh.decode(h2::as_bytes(again), fresh_scratch, {1U << 30, 1U << 20},
                           [&](std::string_view n, std::string_view v) {
                               back.emplace_back(n, v);
                           }) == h2::decode_status::ok);
        check(back == fields);
        check(fresh.table().count() == 0);
    }

    void on_event(const h2::frame_reader::result& r) {
        using event = h2::frame_reader::event;
        if (r.what == event::error) {
            closed = r.error.connection_error();
            return;
        }
        if (r.what == event::data) {
            check(r.header.is(h2::frame_type::data) && r.header.stream != 0);
            check(r.first == !in_data);
            in_data = !r.last;
            data_bytes = r.first ? r.payload.size() : data_bytes + r.payload.size();
            // The pieces are the payload without the pad length and padding.
            check(data_bytes + (r.header.has(h2::flag::padded) ? 1 : 0) <= r.header.length);
            return;
        }
        check(!in_data);
        check(r.header.length <= reader.max_frame_size());
        switch (r.header.kind()) {
        case h2::frame_type::headers:
            block.assign(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
            if (r.header.has(h2::flag::end_headers)) decode_block();
            break;
        case h2::frame_type::continuation:
            block.append(reinterpret_cast<const char*>(r.payload.data()), r.payload.size());
            if (r.header.has(h2::flag::end_headers)) decode_block();
            break;
        case h2::frame_type::settings:
            check(r.header.stream == 0 && r.payload.size() % 6 == 0);
            h2::for_each_setting(r.payload, [&](std::uint16_t id, std::uint32_t value) {
                if (id == static_cast<std::uint16_t>(h2::settings_id::header_table_size))
                    decoder.set_max_table_size(value);
            });
            break;
        case h2::frame_type::ping:
            check(r.payload.size() == 8);
            break;
        case h2::frame_type::window_update:
            check(r.payload.size() == 4 && h2::read_u31(r.payload) != 0);
            break;
        default:
            break;
        }
        check(decoder.table().size() <= decoder.table().max_size());
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    const std::size_t read_size = data[0] == 0 ? size : data[0];
    connection c;
    c.limits = {64 * (std::size_t{data[1]} + 1), 1 + std::size_t{data[1]} % 64};
    c.split = 1 + data[0] % 97U;
    const h2::bytes wire(data + 2, size - 2);

    std::string kept;
    for (std::size_t at = 0; at < wire.size() && !c.closed; at += read_size) {
        const auto chunk = wire.subspan(at, std::min(read_size, wire.size() - at));
        kept.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
        h2::bytes in = h2::as_bytes(kept);
        while (!c.closed) {
            const auto r = c.reader.read(in);
            check(r.consumed <= in.size());
            in = in.subspan(r.consumed);
            if (r.what == h2::frame_reader::event::need_more) break;
            c.on_event(r);
        }
        kept.erase(0, kept.size() - in.size());
        // Never more than a frame is kept: its header and the largest payload.
        check(c.closed || kept.size() < h2::frame_header_size + c.reader.max_frame_size());
    }
    return 0;
}
