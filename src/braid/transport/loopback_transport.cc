#include "braid/transport/loopback_transport.h"

#include <cstring>

namespace braid {

void LoopbackTransport::post_send(const RequestPtr& send) {
  IncomingMessage message = matcher_.begin_message(make_data_header(send->key, send->envelope));
  if (message.bytes > 0) std::memcpy(message.dst, send->data, message.bytes);
  message.received = message.bytes;
  matcher_.finish_message(message);
  send->transferred = send->envelope.bytes;
  send->finish();
}

}  // namespace braid
