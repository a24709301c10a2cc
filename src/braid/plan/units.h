// Reading and writing the quantities a planner user types: parameter counts, byte sizes,
// bandwidths, times and FLOP rates, each in the forms people already write them.
//
//   counts      7B, 70e9, 1.3T, 175B, 4096, 32K   (K=1e3, M=1e6, B or G=1e9, T=1e12)
//   bytes       80GiB, 80GB, 64K, 256M, 1.5e9     (KB/MB/GB/TB decimal; K/M/G/T and KiB.. binary;
//                                                  base/byte_size.h, the parser of braid-bench's
//                                                  -b/-e too; rounded to whole bytes, < 2^64)
//   bandwidth   400Gbps, 400Gb/s, 25GB/s, 25GBps, 900GiB/s  (bits when the b is lower case)
//   time        5us, 1.5ms, 2s, 800ns              (a bare number is seconds)
//   flop rate   989T, 989TFLOPS, 1.98e15, 2P       (FLOP per second)
//
// Every parser takes the name of the field it reads, so a bad value is reported as
// "--params: ..." with the accepted forms and range. All values must be finite and > 0.
#pragma once

#include <string>
#include <string_view>

namespace braid::plan {

double parse_count(std::string_view text, std::string_view field);
double parse_bytes(std::string_view text, std::string_view field);
double parse_bandwidth(std::string_view text, std::string_view field);  // bytes per second
double parse_time(std::string_view text, std::string_view field);       // seconds
double parse_flop_rate(std::string_view text, std::string_view field);  // FLOP per second

// Throws InvalidArgument "<field> = <value> is out of range [lo, hi]: <why>" unless lo <= value <= hi.
void require_range(std::string_view field, double value, double lo, double hi, std::string_view why = "");

// Human-readable forms for tables: "14.00 GB (13.04 GiB)", "82.1 ms", "25.0 GB/s", "1.23 PFLOP".
std::string format_bytes(double bytes);
std::string format_seconds(double seconds);
std::string format_rate(double bytes_per_second);
std::string format_flops(double flop);

}  // namespace braid::plan
