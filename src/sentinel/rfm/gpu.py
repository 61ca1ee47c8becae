"""Checks whose message buffers may live in GPU memory (their ``buffers`` parameter)."""

from __future__ import annotations

import reframe as rfm

from sentinel.mpi.transports import Transport, with_device_memory
from sentinel.rfm.gpu_aware import gpu_runtime


class DeviceBuffers(rfm.RegressionTestPlugin):
    """A transport used with device buffers gets its MPI's transports for GPU memory.

    Where ``UCX_TLS`` selects the transport, UCX's copy and IPC transports
    of the environment's GPU runtime join it (``tcp,self,cuda_copy,cuda_ipc``):
    without them UCX cannot touch a device pointer.
    """

    #: What it reads of the test besides ReFrame's attributes and its own
    #: (``tests/unit/test_plugin_needs.py`` holds it to the code).
    plugin_needs = ("buffers",)

    def uses_device_memory(self) -> bool:
        """Whether a rank's buffers are in GPU memory (``device``, ``host-device``, ...)."""
        return "device" in self.buffers

    def transport_env(self, t: Transport) -> dict[str, str]:
        """The transport's variables, with the GPU memory transports for device buffers."""
        env = super().transport_env(t)
        runtime = gpu_runtime(self.current_environ)
        if runtime is None or not self.uses_device_memory():
            return env
        return with_device_memory(env, runtime)
