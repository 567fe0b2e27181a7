"""rooflab.Error: every failure rooflab reports, from the library or from the package."""


class Error(RuntimeError):
    """A rooflab failure, with the parts of its message a caller can act on.

    ``str(error)`` reads ``"rooflab::<op>: argument '<argument>': <problem> (<cuda_error>)"``, the
    parts that are empty left out: the library's own message where the library failed, the same
    shape where the package found the problem before calling it.

    Attributes:
        op: the operation, as the library names it ("reduce", "svd_batched", ...).
        argument: the argument at fault, or "".
        cuda_error: CUDA's name of the error ("cudaErrorMemoryAllocation"), or "".
    """

    def __init__(self, message: str, op: str = "", argument: str = "", cuda_error: str = "") -> None:
        super().__init__(message)
        self.op = op
        self.argument = argument
        self.cuda_error = cuda_error

    def __reduce__(self):
        return type(self), (str(self), self.op, self.argument, self.cuda_error)


def argument_error(op: str, argument: str, problem: str) -> Error:
    """The Error for a bad argument, worded as the library words its own."""
    return Error(f"rooflab::{op}: argument '{argument}': {problem}", op, argument)
