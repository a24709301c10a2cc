// braid._C: the pybind11 module behind `import braid.torch`. It exposes one class,
// ProcessGroupBraid, as a subclass of torch's own c10d ProcessGroup binding, so every
// torch.distributed call (and DDP) dispatches to it through c10d's virtual methods; the Python
// side (python/braid/torch.py) registers the creator under the backend name "braid".
#include <pybind11/pybind11.h>
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
}
