// The stream hello: after a transport connection is admitted (job_token.h) and before it says
// whether it runs TLS, the connector tells which of the peer pair's BRAID_TCP_STREAMS
// connections this one is, and the acceptor answers with its own count, so ranks that
// disagree fail with a Mismatch naming both settings on both sides instead of reading stripes
// as frames. Every stream goes through the full token handshake first: a connection that
// cannot prove the job token never gets this far, whichever stream it claims to be.
//
// Wire: connector -> {index, count}, acceptor -> {count}; one byte each (counts are at most
// kMaxStreams).
#pragma once

#include "braid/base/clock.h"
#include "braid/base/error.h"

namespace braid::tcp {

// Connector side: says this is stream `index` of `count`; throws Mismatch when the acceptor
// runs another count.
void send_stream_hello(int fd, int index, int count, int self, int peer, Deadline deadline, const ErrorContext& ctx);

// Acceptor side: returns the connection's stream index (0 <= index < count); throws Mismatch
// when the connector runs another count, Corrupt on an index out of range.
int receive_stream_hello(int fd, int count, int self, int peer, Deadline deadline, const ErrorContext& ctx);

}  // namespace braid::tcp
