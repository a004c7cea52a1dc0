"""Einsum equations: NumPy's string notation ("ij,jk->ik", implicit output when "->" is absent) and its
interleaved form (op0, sublist0, op1, sublist1, ..., [out_sublist]) with integer labels, parsed into one
Network of label tuples and label sizes, checked with errors that name the problem."""

from ._errors import InvalidArgument


class Network:
    """inputs: one tuple of labels per operand (labels as written: characters or integers); output: the output's
    labels; sizes: label -> extent (every operand agrees)."""

    __slots__ = ("inputs", "output", "sizes")

    def __init__(self, inputs, output, sizes):
        self.inputs, self.output, self.sizes = inputs, output, sizes

    def labels(self):
        """Every label, in order of first appearance."""
        seen = {}
        for term in self.inputs:
            for label in term:
                seen.setdefault(label, None)
        return list(seen)


def _string_terms(equation, count):
    if not isinstance(equation, str):
        raise InvalidArgument(f"tropical: the equation must be a string, not {type(equation).__name__}")
    text = "".join(equation.split())
    if "." in text:
        raise InvalidArgument(f"tropical: einsum equation {equation!r}: '...' is not supported; name every label")
    if text.count("->") > 1:
        raise InvalidArgument(f"tropical: einsum equation {equation!r} has more than one '->'")
    left, arrow, right = text.partition("->")
    inputs = [tuple(term) for term in left.split(",")]
    for term in inputs:
        for label in term:
            if not label.isalpha():
                raise InvalidArgument(f"tropical: einsum equation {equation!r}: label {label!r} is not a letter")
    if len(inputs) != count:
        raise InvalidArgument(f"tropical: einsum equation {equation!r} has {len(inputs)} operand(s) but "
                              f"{count} were given")
    if arrow:
        output = tuple(right)
        for label in output:
            if not label.isalpha():
                raise InvalidArgument(f"tropical: einsum equation {equation!r}: output label {label!r} is not a "
                                      "letter")
    else:  # NumPy's implicit output: the labels seen once, in alphabetical order
        counts = {}
        for term in inputs:
            for label in term:
                counts[label] = counts.get(label, 0) + 1
        output = tuple(sorted(label for label, n in counts.items() if n == 1))
    return inputs, output


def split_arguments(args):
    """(equation or None, operands, sublists or None, output sublist or None) of einsum's positional arguments:
    ("ij,jk->ik", a, b) or the interleaved (a, [0, 1], b, [1, 2], [0, 2])."""
    if not args:
        raise InvalidArgument("tropical: einsum needs an equation and operands")
    if isinstance(args[0], str):
        return args[0], list(args[1:]), None, None
    operands, sublists = list(args[0::2]), []
    rest = list(args[1::2])
    output = None
    if len(args) % 2 == 1:  # a trailing output sublist
        output = args[-1]
        operands = list(args[0:-1:2])
    sublists = rest[:len(operands)]
    if len(sublists) != len(operands):
        raise InvalidArgument("tropical: the interleaved form takes operand, sublist pairs (and an optional output "
                              "sublist)")
    return None, operands, sublists, output


def _sublist(sub, what):
    try:
        labels = tuple(sub)
    except TypeError:
        raise InvalidArgument(f"tropical: {what} must be a list of integer labels, not {sub!r}") from None
    for label in labels:
        if isinstance(label, bool) or not isinstance(label, int):
            raise InvalidArgument(f"tropical: {what} holds {label!r}; labels of the interleaved form are integers")
    return labels


def _interleaved_terms(sublists, output):
    inputs = [_sublist(s, f"sublist {i}") for i, s in enumerate(sublists)]
    if output is None:
        counts = {}
        for term in inputs:
            for label in term:
                counts[label] = counts.get(label, 0) + 1
        return inputs, tuple(sorted(label for label, n in counts.items() if n == 1))
    return inputs, _sublist(output, "the output sublist")


def parse(equation, shapes, sublists=None, output=None):
    """The Network of an equation (or of interleaved sublists and output) over operands of the given shapes."""
    if sublists is None:
        inputs, output = _string_terms(equation, len(shapes))
    else:
        inputs, output = _interleaved_terms(sublists, output)
    sizes = {}
    for i, (term, shape) in enumerate(zip(inputs, shapes)):
        if len(term) != len(shape):
            raise InvalidArgument(f"tropical: operand {i} has {len(shape)} dimension(s) but its term "
                                  f"{_show(term)} names {len(term)}")
        for label, extent in zip(term, shape):
            extent = int(extent)
            if extent == 0:
                raise InvalidArgument(f"tropical: label {label!r} has dimension 0 (operand {i}); every label needs "
                                      "at least one index")
            known = sizes.setdefault(label, extent)
            if known != extent:
                raise InvalidArgument(f"tropical: label {label!r} has size {known} in one operand but {extent} in "
                                      f"operand {i}")
    seen = set()
    for label in output:
        if label not in sizes:
            raise InvalidArgument(f"tropical: output label {label!r} appears in no operand")
        if label in seen:
            raise InvalidArgument(f"tropical: output label {label!r} appears twice in the output")
        seen.add(label)
    return Network([tuple(t) for t in inputs], tuple(output), sizes)


def _show(term):
    return "".join(term) if all(isinstance(x, str) for x in term) else str(list(term))
