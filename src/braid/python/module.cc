// braid._C: the pybind11 module behind `import braid.torch`. It exposes one class,
// ProcessGroupBraid, as a subclass of torch's own c10d ProcessGroup binding, so every
// torch.distributed call (and DDP) dispatches to it through c10d's virtual methods; the Python
// side (python/braid/torch.py) registers the creator under the backend name "braid".
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>  // c10::intrusive_ptr as a pybind11 holder

#include "braid/python/process_group_braid.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "braid's torch.distributed backend (use `import braid.torch`)";
  // Registers c10d's ProcessGroup and Store types, which the class below derives from / takes.
  py::module_::import("torch.distributed");
  py::class_<braid::python::ProcessGroupBraid, c10d::ProcessGroup,
             c10::intrusive_ptr<braid::python::ProcessGroupBraid>>(m, "ProcessGroupBraid")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size) {
             return c10::make_intrusive<braid::python::ProcessGroupBraid>(store, rank, size);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"),
           // Rendezvous waits for the other ranks: let their Python threads (and ours) run.
           py::call_guard<py::gil_scoped_release>());

  // braid's DDP comm hooks (python/braid/hooks.py).
  py::class_<braid::python::CompressionHookResiduals, std::shared_ptr<braid::python::CompressionHookResiduals>>(
      m, "CompressionHookResiduals")
      .def(py::init<>())
      .def("serialize",
           [](const braid::python::CompressionHookResiduals& r) {
             const std::vector<std::byte> image = r.serialize();
             return py::bytes(reinterpret_cast<const char*>(image.data()), image.size());
           })
      .def("deserialize",
           [](braid::python::CompressionHookResiduals& r, const py::bytes& image) {
             const std::string bytes = image;
             const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
             r.deserialize(std::vector<std::byte>(first, first + bytes.size()));
           })
      .def_property_readonly("bytes", &braid::python::CompressionHookResiduals::bytes);
  // pieces: (name, offset, count, rows, cols) per parameter of the bucket.
  m.def(
      "compressed_allreduce",
      [](braid::python::ProcessGroupBraid& group, const at::Tensor& buffer,
         const std::vector<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::int64_t>>& pieces,
         const std::string& codec, std::int64_t min_elements, std::int64_t warmup_steps, std::int64_t step,
         std::shared_ptr<braid::python::CompressionHookResiduals> residuals) {
        std::vector<braid::python::HookPiece> cut;
        for (const auto& [name, offset, count, rows, cols] : pieces) {
          cut.push_back({.name = name, .offset = offset, .count = count, .shape = {.rows = rows, .cols = cols}});
        }
        braid::compress::CompressionPolicyOptions options{.min_elements = min_elements, .warmup_steps = warmup_steps};
        return group.compressed_allreduce(buffer, std::move(cut), codec, options, step, std::move(residuals));
      },
      py::call_guard<py::gil_scoped_release>());
}
