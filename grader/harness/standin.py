"""A stand-in GPU for CPU workers (FORMAT.md section 2: the envelope's `"stand_in"`).

Device-agnostic code must run on a machine without a GPU and on one with a GPU. A CPU
worker runs such an exercise twice: as it is (no GPU), and once more with this stand-in,
under which `torch.cuda.is_available()` is True and `"cuda"` is a device of its own:

- a tensor moved to it (`.to(device)`, `.cuda()`, a factory's `device=`) is a new CPU
  tensor tagged "cuda" (moving never changes the tensor moved: `x.to(device)` whose
  result is thrown away leaves `x` where it was); `model.to(device)` / `.cuda()` tag the
  module's parameters and buffers in place, as on a GPU; `p.data = t` takes `t`'s tag;
- every operation's result takes the device of its operands, and an operation that mixes
  a "cuda" tensor with a CPU tensor of more than one element raises the RuntimeError a
  GPU raises (a 0-dimensional CPU tensor may join a GPU operation, as on a GPU);
  `.numpy()` of a "cuda" tensor raises too;
- tensors made where no operation is seen (the gradients autograd writes) take no tag
  and join either side;
- `.device`, `.is_cuda` and `.get_device()` answer as on a GPU, and the capture encodes a
  tagged tensor's device as "cuda:0".

Tags are kept by tensor identity (a weak reference removes a tag when its tensor dies).
This is a simulation in the learner's own interpreter (zone 3, FORMAT.md section 7):
it makes a CPU worker see the device bugs a GPU would show, nothing more.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

GPU = "cuda"
CPU = "cpu"
GPU_NAME = "cuda:0"
MIXED = (
    "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"
)
NUMPY = (
    "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
    "to host memory first."
)
MOVES = frozenset({"to", "cuda", "cpu", "copy_", "type"})  # may cross devices
PROPERTIES = frozenset({"device", "is_cuda"})
# torch's own calls go through a frame of no file: a warning they raise names it instead
# of this module, whose source a warning would otherwise read (a harness-file event).
_call: Callable[[Any, Any, Any], Any] = eval(  # a fixed, constant lambda
    compile("lambda func, args, kwargs: func(*args, **kwargs)", "<torch>", "eval")
)


class Tags:
    """Device tags by tensor identity."""

    def __init__(self) -> None:
        self._tags: dict[int, tuple[str, Any]] = {}

    def get(self, tensor: torch.Tensor) -> str | None:
        found = self._tags.get(id(tensor))
        return found[0] if found is not None else None

    def set(self, tensor: torch.Tensor, device: str | None) -> None:
        key = id(tensor)
        if device is None:
            self._tags.pop(key, None)
            return
        tags = self._tags
        try:
            ref = weakref.ref(tensor, lambda _: tags.pop(key, None))
        except TypeError:
            return
        tags[key] = (device, ref)


def _kind(device: Any) -> str | None:
    """The stand-in's "cuda" / "cpu" for a device argument (str, torch.device, int), else
    None (not a device, or another real one such as "meta", passed through untouched)."""
    if isinstance(device, torch.device):
        device = device.type
    if isinstance(device, str):
        kind = device.split(":")[0]
        return kind if kind in (GPU, CPU) else None
    if isinstance(device, int) and not isinstance(device, bool):
        return GPU
    return None


class StandInMode(TorchFunctionMode):
    """The torch function mode that plays the GPU (the module docstring)."""

    def __init__(self, tags: Tags) -> None:
        super().__init__()
        self.tags = tags

    def device_of(self, tensor: torch.Tensor) -> str | None:
        return self.tags.get(tensor)

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        owner = getattr(getattr(func, "__self__", None), "__name__", "")
        if name == "__get__" and owner in PROPERTIES:
            return self._property(owner, args[0])
        if name == "__set__" and owner == "data":
            result = _call(func, args, kwargs)
            self.tags.set(args[0], self.device_of(args[1]))
            return result
        if name == "get_device" and args:
            return 0 if self.device_of(args[0]) == GPU else -1
        if name in MOVES:
            return self._move(func, name, args, kwargs)
        if name == "numpy" and args and self.device_of(args[0]) == GPU:
            raise TypeError(NUMPY)
        target = _kind(kwargs.get("device"))
        if target == GPU:
            kwargs["device"] = CPU
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        device = target or self._common(inputs, name)
        result = _call(func, args, kwargs)
        if target is not None and self._moved_in_place(result, inputs, target):
            result = result.clone()  # as_tensor(t, device=...) copies across devices
        if device is not None:
            self._tag_outputs(result, inputs, device)
        return result

    def _moved_in_place(self, result: Any, inputs: list[torch.Tensor], target: str) -> bool:
        """Did a factory given another device return one of its inputs itself?"""
        if not isinstance(result, torch.Tensor) or not any(result is t for t in inputs):
            return False
        return (self.device_of(result) or CPU) != target

    def _property(self, owner: str, tensor: torch.Tensor) -> Any:
        on_gpu = self.device_of(tensor) == GPU
        if owner == "is_cuda":
            return on_gpu
        return torch.device(GPU_NAME) if on_gpu else torch.device(CPU)

    def _common(self, inputs: list[torch.Tensor], name: str) -> str | None:
        tags = [(self.device_of(t), t) for t in inputs]
        on_gpu = any(tag == GPU for tag, _ in tags)
        on_cpu = [t for tag, t in tags if tag == CPU]
        if on_gpu and any(t.dim() > 0 for t in on_cpu):
            raise RuntimeError(f"{MIXED} (in {name or 'an operation'})")
        if on_gpu:
            return GPU
        return CPU if on_cpu or not inputs else None

    def _tag_outputs(self, result: Any, inputs: list[torch.Tensor], device: str) -> None:
        for item in tree_flatten(result)[0]:
            if isinstance(item, torch.Tensor) and not any(item is t for t in inputs):
                self.tags.set(item, device)

    def _move(self, func: Any, name: str, args: Any, kwargs: dict[str, Any]) -> Any:
        tensor = args[0]
        if name == "copy_":  # crosses devices: the destination keeps its own
            return _call(func, args, kwargs)
        target = self._target(name, args, kwargs)
        if name in ("to", "cuda", "cpu"):
            args, kwargs = self._on_cpu(name, args, kwargs)
            if name != "to":
                func = torch.Tensor.to
                args = (tensor,)
        result = _call(func, args, kwargs)
        here = self.device_of(tensor)
        if target is None or target == here:
            if result is not tensor:
                self.tags.set(result, here)
            return result
        if result is tensor:  # a real move makes a new tensor on the other device
            result = tensor.clone()
        self.tags.set(result, target)
        return result

    def _target(self, name: str, args: Any, kwargs: dict[str, Any]) -> str | None:
        if name == "cuda":
            return GPU
        if name == "cpu":
            return CPU
        if name != "to":
            return None
        if "device" in kwargs:
            return _kind(kwargs["device"])
        for item in args[1:]:
            if isinstance(item, torch.Tensor):
                return self.device_of(item) or CPU
            kind = _kind(item)
            if kind is not None:
                return kind
        return None

    def _on_cpu(self, name: str, args: Any, kwargs: dict[str, Any]) -> tuple[Any, Any]:
        """The call's arguments with every device replaced by the CPU."""
        if name != "to":
            return args, {k: v for k, v in kwargs.items() if k != "device"}
        kept = [args[0]]
        for item in args[1:]:
            if isinstance(item, torch.Tensor):
                kept.append(item.dtype if self.device_of(item) == GPU else item)
            elif _kind(item) != GPU:
                kept.append(item)
        rest = {k: (CPU if k == "device" and _kind(v) == GPU else v) for k, v in kwargs.items()}
        return tuple(kept), rest


def _module_mover(
    original: Callable[..., Any], tags: Tags, fixed: str | None
) -> Callable[..., Any]:
    """Module.to / .cuda / .cpu: the original on the CPU, then the tags set in place."""

    def move(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        target = fixed
        if fixed is None:
            target = _kind(kwargs.get("device"))
            if target == GPU:
                kwargs.pop("device")
            rest = []
            for item in args:
                if isinstance(item, torch.Tensor):
                    target = tags.get(item) or CPU
                    rest.append(item.dtype if target == GPU else item)
                elif _kind(item) is not None:
                    target = _kind(item)
                    if target != GPU:
                        rest.append(item)
                else:
                    rest.append(item)
            result = original(module, *rest, **kwargs)
        else:
            result = original(module)
        if target is not None:
            for tensor in [*module.parameters(), *module.buffers()]:
                tags.set(tensor, target)
                if tensor.grad is not None:
                    tags.set(tensor.grad, target)
        return result

    return move


def install() -> tuple[StandInMode, Callable[[torch.Tensor], str]]:
    """Plays a GPU from here on: `torch.cuda` answers as with one device, modules move
    by tag. Returns the mode to enter around the learner's code, and the device name of
    a tensor for the capture."""
    tags = Tags()
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.is_initialized = lambda: True
    cuda.synchronize = lambda *args, **kwargs: None
    cuda.manual_seed = lambda seed: None
    cuda.manual_seed_all = lambda seed: None
    cuda.get_device_name = lambda *args, **kwargs: "stand-in GPU"
    module = torch.nn.Module
    module.to = _module_mover(module.to, tags, None)  # type: ignore[method-assign]
    module.cuda = _module_mover(module.cuda, tags, GPU)  # type: ignore[method-assign]
    module.cpu = _module_mover(module.cpu, tags, CPU)  # type: ignore[method-assign]
    mode = StandInMode(tags)

    def device_name(tensor: torch.Tensor) -> str:
        return GPU_NAME if tags.get(tensor) == GPU else str(tensor.device)

    return mode, device_name
