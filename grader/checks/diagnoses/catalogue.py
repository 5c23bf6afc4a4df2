"""The named mistakes (FORMAT.md section 5): `DIAGNOSES`, every slug with its title and
hint, and `describe`, the entry a report shows for a slug."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Diagnosis:
    slug: str
    title: str
    hint: str


def _registry(*items: Diagnosis) -> Mapping[str, Diagnosis]:
    return MappingProxyType({item.slug: item for item in items})


DIAGNOSES: Mapping[str, Diagnosis] = _registry(
    Diagnosis(
        "forgot-zero-grad",
        "Gradients accumulated",
        "PyTorch adds each backward() into .grad: clear it (optimizer.zero_grad() or "
        "x.grad.zero_()) before every backward pass.",
    ),
    Diagnosis(
        "sign-error",
        "Sign error",
        "Your result is the negative of the expected one: check the sign of the expression "
        "you backpropagate from or of your update.",
    ),
    Diagnosis(
        "scaled-by-n",
        "Scaled by a whole number",
        "Your result is off by a whole factor N: check mean versus sum (divide or multiply "
        "by the number of elements).",
    ),
    Diagnosis(
        "unscaled-microbatch-loss",
        "Unscaled micro-batch loss",
        "Divide each micro-batch loss by the number of micro-batches before backward() so "
        "that the accumulated gradient equals the full-batch gradient.",
    ),
    Diagnosis(
        "graph-broken",
        "Gradient never reached this tensor",
        "The tensor is not connected to the graph: create it with requires_grad=True and do "
        "not detach(), .item(), re-wrap it in torch.tensor() or compute under no_grad().",
    ),
    Diagnosis(
        "missing-retain-grad",
        "Gradient of a non-leaf tensor not kept",
        "PyTorch keeps .grad only for leaf tensors: call .retain_grad() on the intermediate "
        "tensor before backward().",
    ),
    Diagnosis(
        "nonscalar-backward",
        "backward() on a non-scalar tensor",
        "backward() without arguments needs a scalar: pass gradient=torch.ones_like(y) (or "
        "the upstream gradient), or reduce to a scalar first.",
    ),
    Diagnosis(
        "freed-graph",
        "Backward through a freed graph",
        "The first backward() frees the graph: pass retain_graph=True to the earlier call if "
        "you need to backpropagate through it again.",
    ),
    Diagnosis(
        "inplace-leaf",
        "In-place change of a leaf that requires grad",
        "Update parameters inside torch.no_grad() (or on .data) instead of changing a leaf "
        "that requires grad in place.",
    ),
    Diagnosis(
        "loss-flat",
        "The loss does not fall",
        "The loss stays flat: check that you call backward() and optimizer.step() every "
        "iteration and that the learning rate is not too small.",
    ),
    Diagnosis(
        "loss-diverges",
        "The loss diverges",
        "The loss grows or becomes NaN: lower the learning rate and check the sign of your "
        "update and that gradients are cleared.",
    ),
    Diagnosis(
        "not-converged",
        "Training stopped too early",
        "The loss falls but does not get low enough: train for more steps or use a larger "
        "learning rate.",
    ),
    Diagnosis(
        "no-backward",
        "backward() was never called",
        "Reading .grad before backward(): gradients exist only after you call backward() "
        "on the result (or torch.autograd.grad).",
    ),
    Diagnosis(
        "hard-coded",
        "Value hard-coded",
        "The expected value is there but autograd did not put it there (no backward() ran, "
        "or .grad was written after the last one): let autograd compute it.",
    ),
    Diagnosis(
        "not-from-autograd",
        "Value right only at the exercise's inputs",
        "The value is right at the exercise's inputs but not when the starting values or the "
        "gradients change (typed in, worked out by hand, or from a stand-in for the loss "
        "built to match at those inputs): compute the real loss from your tensors and take "
        "the value from what autograd computed, for example x.grad.clone().",
    ),
    Diagnosis(
        "wrong-backward-root",
        "backward() from the wrong tensor",
        "Call backward() on the result the exercise asks for (usually the loss), not on an "
        "intermediate result or on a tensor made only to have something to call backward on.",
    ),
    Diagnosis(
        "grad-cleared",
        "Gradient computed, then cleared",
        "backward() did fill .grad, but your code cleared it afterwards (zero_grad(), "
        "grad.zero_() or .grad = None after the last backward()): clear gradients before "
        "backward(), not after it.",
    ),
    Diagnosis(
        "grad-not-stored",
        "Gradient computed but never stored",
        "torch.autograd.grad returns the gradients instead of writing .grad: store its "
        "result (x.grad = grads[0]) or call backward().",
    ),
    Diagnosis(
        "inputs-excluded",
        "Tensor left out of backward(inputs=...)",
        "backward(inputs=[...]) accumulates only into the tensors it lists: list every "
        "tensor whose .grad you need, or leave inputs out.",
    ),
    Diagnosis(
        "backward-skipped",
        "backward() skipped after an error",
        "An earlier call in the same try block raised, so the backward() after it never ran: "
        "put only the call that is expected to fail inside the try block.",
    ),
    Diagnosis(
        "params-edited",
        "Parameters changed outside the optimizer",
        "Let optimizer.step() update the parameters: do not set or change them by hand "
        "(fill_, copy_, assignments under no_grad) between or after the optimizer's steps.",
    ),
    Diagnosis(
        "full-jacobian",
        "The full Jacobian was built",
        "One backward pass with the upstream gradient v gives v^T J directly: pass v as "
        "backward's gradient (or autograd.grad's grad_outputs) instead of building J row by "
        "row.",
    ),
    Diagnosis(
        "missing-name",
        "Name not defined",
        "Define the variable or function the exercise asks for, with exactly that name.",
    ),
    Diagnosis(
        "wrong-type",
        "Wrong kind of value",
        "This name holds another kind of value than expected, such as a float instead of a "
        "tensor: keep the kind of value the exercise asks for.",
    ),
    Diagnosis(
        "shape-mismatch",
        "Wrong shape",
        "The shape differs from the expected one: check broadcasting, reductions and reshapes.",
    ),
    Diagnosis(
        "dtype-mismatch",
        "Wrong dtype",
        "The dtype differs from the expected one: create tensors with the expected dtype "
        "(write 5.0 for a float, not 5).",
    ),
    Diagnosis(
        "device-mismatch",
        "Wrong device",
        "The tensor is on another device than expected: create it on (or move it to) the "
        "device the exercise uses: a `device` variable set to "
        "torch.device('cuda' if torch.cuda.is_available() else 'cpu'), with .to(device).",
    ),
    Diagnosis(
        "not-an-autograd-function",
        "Not a custom autograd Function",
        "Subclass torch.autograd.Function with static forward(ctx, ...) and backward(ctx, "
        "grad_output), and call it through .apply: a plain class or function gets autograd's "
        "own gradient, not yours.",
    ),
    Diagnosis(
        "autograd-in-backward",
        "Autograd used inside backward",
        "backward must compute the derivative itself from what forward saved: no "
        "torch.autograd.grad, no .backward(), no graph built or kept for it.",
    ),
    Diagnosis(
        "used-autograd",
        "Autograd used where the exercise forbids it",
        "Compute the gradients yourself, as the exercise asks (NumPy only): no tensors that "
        "require grad, no backward() or torch.autograd.grad.",
    ),
    Diagnosis(
        "builtin-derivative",
        "PyTorch's own derivative used",
        "backward must apply the chain rule you worked out: grad_output times f'(x) "
        "written with ordinary tensor operations, not a built-in derivative (an aten "
        "*_backward operator, torch.func.vjp/jvp, forward-mode dual tensors).",
    ),
    Diagnosis(
        "numerical-derivative",
        "A numerical approximation, not the derivative",
        "Finite differences (f(x + h) - f(x - h)) / 2h, or a complex step, only approximate "
        "the derivative, and cost extra forward evaluations: derive the formula for the "
        "derivative and compute it exactly from the saved values.",
    ),
    Diagnosis(
        "no-backward-pass",
        "No backward pass",
        "Backpropagation reuses the forward pass's intermediate values and runs the chain "
        "rule once from the loss back to every parameter; perturbing each parameter "
        "(complex step, dual numbers) and re-running the forward pass is not a backward pass.",
    ),
    Diagnosis(
        "batch-too-large",
        "More samples in one forward pass than allowed",
        "Call the model on micro-batches of at most micro_batch_size samples and let "
        "backward() accumulate their gradients: never on the whole batch at once.",
    ),
    Diagnosis(
        "layers-bypassed",
        "The model's layers were bypassed",
        "Compute the predictions by calling the model itself (model(x_micro)) on every "
        "micro-batch, not its weights by hand.",
    ),
    Diagnosis(
        "backward-per-input",
        "One backward() per variable",
        "A single backward() from the result fills the .grad of every tensor it depends "
        "on: call it once, not once for each variable.",
    ),
    Diagnosis(
        "copied-too-early",
        "Copied before the last backward()",
        "Your value is what .grad held after an earlier backward() call: take the copy "
        "(x.grad.clone()) after the last backward() it must include.",
    ),
    Diagnosis(
        "missing-seed",
        "Random numbers not seeded",
        "The exercise asks you to seed torch: without torch.manual_seed(...) before the model "
        "is created its starting weights are random and your loss curve cannot match the "
        "reference's, so keep the seed line the statement gives.",
    ),
    Diagnosis(
        "no-double-backward",
        "Second derivative not taken by autograd",
        "Differentiate the first derivative itself: take it with create_graph=True, then "
        "call torch.autograd.grad (or backward) on it, since finite differences of first "
        "derivatives or a formula worked out by hand give the number without the skill.",
    ),
    Diagnosis(
        "single-backward",
        "One backward for all micro-batches",
        "Call backward() on each micro-batch's (weighted) loss inside the loop, so that the "
        "gradients accumulate in .grad: joining the outputs into one full-batch loss needs "
        "the whole batch's graph in memory at once, which accumulation is meant to avoid.",
    ),
    Diagnosis(
        "graph-not-reused",
        "Graph rebuilt instead of reused",
        "retain_graph=True keeps the graph for another backward(): call backward() again on "
        "the same tensor instead of computing it anew (a rebuilt graph retains nothing).",
    ),
    Diagnosis(
        "leaf-recreated",
        "Parameter re-created instead of updated in place",
        "Update the parameter in place under torch.no_grad() (w -= lr * w.grad) and then "
        "clear its gradient: a new tensor made from .item() each step is a different leaf, "
        "so anything holding the old one (an optimizer, a model) never sees the update.",
    ),
    Diagnosis(
        "grading-budget-exceeded",
        "Grading budget exceeded",
        "Judging your run took the grader more than its CPU budget, so this check was not "
        "reached: make fewer backward calls or record fewer tensors.",
    ),
    Diagnosis(
        "crashed",
        "Your code raised an error",
        "Your code stopped with an exception: read the error message and the line it names.",
    ),
    Diagnosis(
        "wrong-value",
        "Wrong value",
        "The value differs from the expected one: compare your computation with the "
        "statement step by step.",
    ),
)


def describe(slug: str, extra: Mapping[str, Diagnosis] | None = None) -> Diagnosis:
    """The registry entry for `slug` (exercise-specific ones in `extra` first)."""
    if extra and slug in extra:
        return extra[slug]
    return DIAGNOSES.get(slug, DIAGNOSES["wrong-value"])
