#include "braid/transport/loopback_transport.h"

#include <cstring>

namespace braid {

void LoopbackTransport::post_send(const RequestPtr& send) {
  IncomingMessage message = matcher_.begin_message(make_data_header(send->key, send->envelope));
  send->buffer().for_each(0, message.bytes, [&, at = std::uint64_t{0}](std::byte* from, std::size_t n) mutable {
    message.dst.write(at, from, n);
    at += n;
    return true;
  });
  message.received = message.bytes;
  matcher_.finish_message(message);
  send->transferred = send->envelope.bytes;
  send->finish();
}

}  // namespace braid
