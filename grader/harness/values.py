"""Tagged JSON encoding of Python/torch/numpy values (FORMAT.md section 3).

Runs inside the sandbox: standard library, torch and numpy only. Lossless for what the
checks compare (floats as JSON numbers, NaN/Inf as strings), capped in size.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

MAX_DEPTH = 8  # nesting of lists/dicts kept
MAX_ITEMS = 1000  # items of one list/dict kept
MAX_STRING = 10_000  # characters of one string kept
MAX_PARAMS = 200  # parameters of one nn.Module kept
# Taken at import, before any learner code: `decode` holds a hidden case's data while the
# harness prepares the case, and the learner's code can rebind module attributes of torch
# and numpy (which the runner's snapshot does not watch) to see what they are given.
_TENSOR = torch.tensor
_ARRAY = np.array


def number(value: float | int | bool) -> float | int | bool | str:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def unnumber(value: Any) -> Any:
    if isinstance(value, str):
        return float(value)
    return value


def dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _flat(tensor: torch.Tensor, max_elements: int) -> tuple[list[Any], bool]:
    flat = tensor.detach().reshape(-1)
    truncated = flat.numel() > max_elements
    if truncated:
        flat = flat[:max_elements]
    flat = flat.cpu()
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    return [number(v) for v in flat.tolist()], truncated


def _device_name(tensor: torch.Tensor) -> str:
    return str(tensor.device)


# A tensor's device in the capture; a stand-in GPU run replaces it (standin.py).
device_name: Callable[[torch.Tensor], str] = _device_name


def plain_tensor(tensor: torch.Tensor, max_elements: int) -> dict[str, Any]:
    data: list[Any]
    if tensor.device.type == "meta":  # no data to read: shape, dtype and device only
        data, truncated = [], tensor.numel() > 0
    else:
        data, truncated = _flat(tensor, max_elements)
    return {
        "kind": "tensor",
        "dtype": dtype_name(tensor.dtype),
        "shape": list(tensor.shape),
        "device": device_name(tensor),
        "requires_grad": False,
        "is_leaf": True,
        "grad_fn": None,
        "data": data,
        "grad": None,
        "truncated": truncated,
    }


def grad_of(tensor: torch.Tensor, max_elements: int) -> dict[str, Any] | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grad = tensor.grad
    if not isinstance(grad, torch.Tensor):
        return None
    return plain_tensor(grad, max_elements)


def encode_tensor(tensor: torch.Tensor, max_elements: int) -> dict[str, Any]:
    if tensor.layout != torch.strided:
        return {"kind": "object", "type": f"{type(tensor).__name__} ({tensor.layout})"}
    encoded = plain_tensor(tensor, max_elements)
    grad_fn = tensor.grad_fn
    encoded.update(
        requires_grad=bool(tensor.requires_grad),
        is_leaf=bool(tensor.is_leaf),
        grad_fn=type(grad_fn).__name__ if grad_fn is not None else None,
        grad=grad_of(tensor, max_elements),
        retains_grad=bool(tensor.retains_grad),
    )
    return encoded


def encode(value: Any, max_elements: int, depth: int = 0) -> dict[str, Any]:
    """Encodes one value; anything unknown becomes {"kind": "object", "type": ...}."""
    if depth > MAX_DEPTH:
        return {"kind": "object", "type": "too deeply nested"}
    if isinstance(value, torch.Tensor):
        return encode_tensor(value, max_elements)
    if isinstance(value, torch.nn.Module):
        return _encode_module(value, max_elements)
    if value is None:
        return {"kind": "none"}
    if isinstance(value, bool | np.bool_):
        return {"kind": "bool", "value": bool(value)}
    if isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, complex):
        plain = value.item() if isinstance(value, np.generic) else value
        return {"kind": "number", "value": number(plain)}
    if isinstance(value, str):
        return {"kind": "str", "value": value[:MAX_STRING]}
    if isinstance(value, np.ndarray):
        return _encode_ndarray(value, max_elements)
    if isinstance(value, BaseException):
        return {"kind": "exception", "type": type(value).__name__, "message": _text(value)}
    if isinstance(value, list | tuple):
        items = [encode(v, max_elements, depth + 1) for v in list(value)[:MAX_ITEMS]]
        return {"kind": "list", "items": items}
    if isinstance(value, dict):
        keys = list(value)[:MAX_ITEMS]
        return {
            "kind": "dict",
            "items": {str(k)[:200]: encode(value[k], max_elements, depth + 1) for k in keys},
        }
    return {"kind": "object", "type": type(value).__name__[:200]}


def _text(error: BaseException) -> str:
    try:
        return str(error)[:MAX_STRING]
    except Exception:
        return "<unprintable message>"


def _encode_module(module: torch.nn.Module, max_elements: int) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for index, (name, param) in enumerate(module.named_parameters()):
        if index >= MAX_PARAMS:
            break
        params[name] = encode_tensor(param, max_elements)
    return {"kind": "module", "type": type(module).__name__[:200], "params": params}


def _encode_ndarray(array: np.ndarray, max_elements: int) -> dict[str, Any]:
    if array.dtype.kind not in "biuf":
        return {"kind": "object", "type": f"ndarray of {array.dtype}"}
    flat = array.reshape(-1)
    truncated = flat.size > max_elements
    return {
        "kind": "ndarray",
        "dtype": str(array.dtype),
        "shape": list(array.shape),
        "data": [number(v) for v in flat[:max_elements].tolist()],
        "truncated": truncated,
    }


def grads_of_value(value: Any, max_elements: int) -> dict[str, Any] | None:
    """The gradient(s) a tracked name holds: a tensor's .grad, or a module's params' grads."""
    if isinstance(value, torch.Tensor):
        return grad_of(value, max_elements)
    if isinstance(value, torch.nn.Module):
        items = {}
        for index, (name, param) in enumerate(value.named_parameters()):
            if index >= MAX_PARAMS:
                break
            grad = grad_of(param, max_elements)
            items[name] = grad if grad is not None else {"kind": "none"}
        return {"kind": "dict", "items": items}
    return None


def params_of_value(value: Any, max_elements: int) -> dict[str, Any] | None:
    """The values a tracked name holds as parameters: a tensor that requires grad, or a
    module's parameters (a dict by parameter name); None for anything else."""
    if isinstance(value, torch.Tensor):
        return plain_tensor(value, max_elements) if value.requires_grad else None
    if isinstance(value, torch.nn.Module):
        items = {}
        for index, (name, param) in enumerate(value.named_parameters()):
            if index >= MAX_PARAMS:
                break
            items[name] = plain_tensor(param, max_elements)
        return {"kind": "dict", "items": items}
    return None


def decode(raw: Any) -> Any:
    """Decodes a case from the reference capture (runs in both sandboxes)."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if kind == "tensor":
        return _decode_tensor(raw)
    if kind == "ndarray":
        data = [unnumber(v) for v in raw["data"]]
        return _ARRAY(data, dtype=raw["dtype"]).reshape(raw["shape"])
    if kind in ("number", "bool", "str"):
        return unnumber(raw["value"]) if kind == "number" else raw["value"]
    if kind == "list":
        return [decode(v) for v in raw["items"]]
    if kind == "dict":
        return {k: decode(v) for k, v in raw["items"].items()}
    return None


def _decode_tensor(raw: dict[str, Any]) -> torch.Tensor:
    dtype = getattr(torch, raw["dtype"])
    data = [unnumber(v) for v in raw["data"]]
    tensor = _TENSOR(data, dtype=dtype).reshape(raw["shape"])
    if raw.get("requires_grad") and (tensor.is_floating_point() or tensor.is_complex()):
        tensor.requires_grad_(True)
    return tensor
