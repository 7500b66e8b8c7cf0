/// Fuzzes what a /v1/bets session does with the bytes a client sends after the upgrade
/// (net/ws_session.cpp's read loop): Beast's server-side websocket stream, with the gateway's
/// message limit, reads frames (masking, fragmentation, control frames, UTF-8 of text) from an
/// in-memory stream, and each message it completes goes through net/ws_message's parse_message
/// and, when refused, to_wire, as the gateway does.
///
/// The input is delivered twice: whole, and in pieces of 1..16 bytes (the first byte picks) as a
/// socket may deliver them.
///
/// Invariants: both deliveries read the same messages (kind and bytes) and end alike; a message
/// is at most the limit; a text message is valid UTF-8; parse_message never throws, and refuses
/// with an error reply that to_wire renders as JSON whose "type" is "error"; an accepted message
/// names a registered type.

#include "fulltime/core/client_text.hpp"
#include "fulltime/net/endpoint_handlers.hpp"
#include "net/ws_message.hpp"

#include "fuzz_check.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = fulltime::net;

// Small, so that inputs reach the limit; the gateway's default is 64 KiB.
constexpr std::size_t message_max = 512;

struct message {
    bool text = false;
    std::string bytes;
    bool operator==(const message&) const = default;
};

struct session_end {
    std::vector<message> messages;
    bool too_big = false;  ///< ended with websocket::error::message_too_big (closed 1009)
    bool operator==(const session_end&) const = default;
};

const net::endpoint_handlers& handlers() {
    static const net::endpoint_handlers h = [] {
        net::endpoint_handlers out;
        for (const char* type : {"place", "balance", "bets"}) {
            out[type] = net::endpoint_handler{};
        }
        return out;
    }();
    return h;
}

void check_message(const message& m) {
    FUZZ_CHECK(m.bytes.size() <= message_max);
    if (!m.text) {
        return;  // answered "binary frames are not accepted", parse_message never sees it
    }
    FUZZ_CHECK(fulltime::client_text::check(m.bytes, message_max + 1) !=
               fulltime::client_text::fault::invalid_utf8);
    auto parsed = net::detail::parse_message(m.bytes, handlers(), true);
    if (const auto* reply = std::get_if<nlohmann::json>(&parsed)) {
        const std::string wire = net::detail::to_wire(*reply);
        const auto back = nlohmann::json::parse(wire, nullptr, false);
        FUZZ_CHECK(!back.is_discarded() && back.is_object());
        FUZZ_CHECK(back.value("type", "") == "error");
        return;
    }
    const auto& accepted = std::get<net::detail::inbound_message>(parsed);
    FUZZ_CHECK(handlers().contains(accepted.type));
    FUZZ_CHECK(accepted.id.is_string() || accepted.id.is_number_integer());
}

/// Accepts an upgrade on an in-memory stream, hands it `input` (at most `piece` bytes per read
/// when not 0), and reads messages until the stream ends or the websocket fails.
session_end run(std::string_view input, std::size_t piece) {
    boost::asio::io_context ioc;
    beast::test::stream client(ioc);
    websocket::stream<beast::test::stream> ws(ioc);
    ws.next_layer().connect(client);

    http::request<http::empty_body> upgrade{http::verb::get, "/v1/bets", 11};
    upgrade.set(http::field::host, "fuzz");
    upgrade.set(http::field::upgrade, "websocket");
    upgrade.set(http::field::connection, "upgrade");
    upgrade.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
    upgrade.set(http::field::sec_websocket_version, "13");
    beast::error_code ec;
    ws.accept(upgrade, ec);
    FUZZ_CHECK(!ec);
    ws.read_message_max(message_max);

    if (piece != 0) {
        ws.next_layer().read_size(piece);
    }
    ws.next_layer().append(input);
    client.close();  // what follows the input is the end of the stream

    session_end end;
    beast::flat_buffer buffer;
    for (;;) {
        buffer.clear();
        ws.read(buffer, ec);
        if (ec) {
            end.too_big = ec == websocket::error::message_too_big;
            break;
        }
        const auto data = buffer.data();
        end.messages.push_back(message{
            ws.got_text(), std::string(static_cast<const char*>(data.data()), data.size())});
    }
    return end;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::size_t piece = 1 + data[0] % 16;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    const session_end whole = run(input, 0);
    for (const auto& m : whole.messages) {
        check_message(m);
    }
    const session_end pieces = run(input, piece);
    FUZZ_CHECK(pieces == whole);
    return 0;
}
