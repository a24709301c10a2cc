// A POSIX shared-memory segment mapped into this process (RAII: unmapped on destruction).
//
// Segments are pre-faulted when created: first touch of fresh pages costs ~0.4 GB/s on the VMs
// braid targets (DESIGN.md, "Memory is allocated once and reused"), which would otherwise be
// paid inside the first large transfer. Huge pages are requested with madvise; tmpfs honours
// it only where shmem_enabled allows, and the request is harmless elsewhere.
#pragma once

#include <cstddef>
#include <string>

namespace braid::shm {

class Segment {
 public:
  Segment() = default;
  // Creates a new segment (fails if the name exists) of `bytes` bytes, zero-filled and faulted in.
  static Segment create(const std::string& name, std::size_t bytes);
  // Maps an existing segment whole.
  static Segment open(const std::string& name);
  // Removes the name; existing mappings stay valid. Missing names are ignored.
  static void unlink(const std::string& name);

  ~Segment();
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  Segment(std::string name, std::byte* data, std::size_t size) : name_(std::move(name)), data_(data), size_(size) {}
  void release();

  std::string name_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace braid::shm
