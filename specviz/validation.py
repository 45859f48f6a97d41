"""The public API's error contract: each check takes a value as a caller gave it and returns it as
the exact type, or raises a specviz error that names the parameter, what is allowed and what it got.

Nothing is rounded, clamped or read as something else: 1.5 and 2.0 are not integers, ``True`` is not
a number, NaN and infinity are no number's value, bytes are not token ids, a string is capped in
length. ``decode``/``stream`` (``decoding.check_request``), the algorithm registry
(``Param.validate``), ``load_pair`` and the CLI all check through these functions.
"""

from __future__ import annotations

import argparse
import copy
import math
import numbers
import re
from typing import Any, Callable, NoReturn, Sequence

from specviz.errors import InvalidParameterError, ModelLoadError, PromptError, SpecvizError

MAX_SEED = 2**63 - 1  # torch.Generator.manual_seed takes a signed 64-bit integer
MIN_TEMPERATURE = 1e-3  # below it logits / T overflows float32 (1e-45 gave inf, then NaN laws)
MAX_TEMPERATURE = 100.0  # above it every law is uniform noise to float32 precision
MAX_RECORD_TOP_K = 256  # tokens of p and q kept per verified position
MAX_TEXT = 100  # characters in a text parameter unless its Param says otherwise
DEVICES = "auto, cpu, cuda or cuda:N"
_DEVICE = re.compile(r"(auto|cpu|cuda(:[0-9]{1,3})?)")  # [0-9]: \d also reads "٣"


def shown(value: Any, limit: int = 60) -> str:
    """``value`` as a message quotes it: its repr, cut to ``limit`` characters (a huge int by its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {len(str(abs(value))) if value.bit_length() < 13000 else 'over 4000'} digits"
    try:
        text = repr(value)
    except Exception:  # a repr that fails is still a value we can name by its type
        text = f"a {type(value).__name__}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SURROGATE = re.compile("[\ud800-\udfff]")  # half of a UTF-16 pair: no character, and no tokenizer reads it


def about(exc: SpecvizError, param: str, subject: str | None = None) -> SpecvizError:
    """``exc`` marked as a refusal of parameter ``param`` (``SpecvizError.param``); ``subject`` is the
    words its message opens with that name the parameter (default: ``param`` itself, when the message
    opens with it). Returns ``exc``, so ``raise about(Error(...), "seed")`` reads as one statement."""
    subject = param if subject is None else subject
    exc.param = param
    exc.subject = subject if str(exc).startswith(subject) else None
    return exc


def _param(name: str, param: str | None) -> str:
    """The parameter a check's ``name`` is about: ``param`` if given, else the identifier ``name`` opens
    with (``top_k (0 disables it)`` is about ``top_k``)."""
    if param is not None:
        return param
    match = _IDENTIFIER.match(name)
    return match.group() if match else name


def _refuse(error: type[SpecvizError], name: str, allowed: str, value: Any, param: str | None = None) -> SpecvizError:
    return about(error(f"{name} must be {allowed}, got {shown(value)}."), _param(name, param), name)


def _num(x: float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _span(lo: float | None, hi: float | None, hi_text: str | None = None) -> str:
    if lo is not None and hi is not None:
        return f" in [{_num(lo)}, {hi_text or _num(hi)}]"
    if lo is not None:
        return f" >= {_num(lo)}"
    return f" <= {hi_text or _num(hi)}" if hi is not None else ""


def integer(
    name: str,
    value: Any,
    lo: int | None = None,
    hi: int | None = None,
    *,
    hi_text: str | None = None,
    error: type[SpecvizError] = InvalidParameterError,
    param: str | None = None,
) -> int:
    """``value`` if it is an integer (a Python or NumPy int, never a bool or a float) in [lo, hi]."""
    allowed = "an integer" + _span(lo, hi, hi_text)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _refuse(error, name, allowed, value, param)
    value = int(value)
    if lo is not None and value < lo or hi is not None and value > hi:
        raise _refuse(error, name, allowed, value, param)
    return value


def number(
    name: str,
    value: Any,
    lo: float | None = None,
    hi: float | None = None,
    *,
    lo_open: bool = False,
    error: type[SpecvizError] = InvalidParameterError,
    param: str | None = None,
) -> float:
    """``value`` as a float if it is a finite real number (not a bool) in [lo, hi] (``(lo, hi]`` with ``lo_open``)."""
    if lo_open and lo is not None:
        allowed = f"a number in ({_num(lo)}, {_num(hi)}]" if hi is not None else f"a number > {_num(lo)}"
    else:
        allowed = "a finite number" + _span(lo, hi)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _refuse(error, name, allowed, value, param)
    try:
        x = float(value)
    except (OverflowError, ValueError):  # an int too large for a float
        raise _refuse(error, name, allowed, value, param) from None
    if not math.isfinite(x) or lo is not None and (x <= lo if lo_open else x < lo) or hi is not None and x > hi:
        raise _refuse(error, name, allowed, value, param)
    return x


def flag(name: str, value: Any, *, error: type[SpecvizError] = InvalidParameterError, param: str | None = None) -> bool:
    """``value`` if it is ``True`` or ``False`` (not 1, not "yes")."""
    if not isinstance(value, bool):
        raise _refuse(error, name, "true or false", value, param)
    return value


def text(
    name: str,
    value: Any,
    max_len: int = MAX_TEXT,
    *,
    error: type[SpecvizError] = InvalidParameterError,
    param: str | None = None,
) -> str:
    """``value`` if it is a string of at most ``max_len`` characters."""
    allowed = f"text of at most {max_len} characters"
    if not isinstance(value, str):
        raise _refuse(error, name, allowed, value, param)
    if len(value) > max_len:
        raise about(
            error(f"{name} must be {allowed}, got {len(value)} characters ({shown(value, 30)})."),
            _param(name, param),
            name,
        )
    return value


def choice(
    name: str,
    value: Any,
    choices: Sequence[Any],
    *,
    error: type[SpecvizError] = InvalidParameterError,
    param: str | None = None,
) -> Any:
    """``value`` if it is one of ``choices``, of the same type (``True`` is not ``1``)."""
    if not any(type(value) is type(c) and value == c for c in choices):
        raise _refuse(error, name, f"one of {', '.join(map(str, choices))}", value, param)
    return value


def temperature(value: Any) -> float:
    """0 (greedy) or a finite temperature in [MIN_TEMPERATURE, MAX_TEMPERATURE]."""
    allowed = f"0 (greedy) or a number in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}]"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _refuse(InvalidParameterError, "temperature", allowed, value)
    try:
        t = float(value)
    except (OverflowError, ValueError):
        raise _refuse(InvalidParameterError, "temperature", allowed, value) from None
    if not (t == 0 or MIN_TEMPERATURE <= t <= MAX_TEMPERATURE):  # NaN fails both
        raise _refuse(InvalidParameterError, "temperature", allowed, value)
    return t


def prompt(value: Any) -> str | list[int]:
    """The prompt as text (Unicode a tokenizer can read: no lone surrogate) or as a list of token ids
    (ints); a tuple, bytes, numbers, None and mixed lists are refused."""
    if isinstance(value, str):
        bad = _SURROGATE.search(value)
        if bad:
            raise about(
                PromptError(
                    f"prompt must be text a tokenizer can read; it holds a lone surrogate ({ascii(bad.group())}) at "
                    f"character {bad.start()}, half of a UTF-16 pair and no character."
                ),
                "prompt",
            )
        return value
    if isinstance(value, tuple):
        raise about(
            PromptError(
                f"prompt must be text or a list of token ids (integers), got a tuple {shown(value)}: pass list(prompt)."
            ),
            "prompt",
        )
    if isinstance(value, list):
        bad = [i for i in value if isinstance(i, bool) or not isinstance(i, numbers.Integral)]
        if not bad:
            return [int(i) for i in value]
        raise about(
            PromptError(f"prompt must be text or a list of token ids (integers); the list holds {shown(bad[0])}."),
            "prompt",
        )
    hint = " (decode bytes to text first)" if isinstance(value, (bytes, bytearray)) else ""
    raise about(
        PromptError(f"prompt must be text or a list of token ids (integers), got {shown(value)}{hint}."), "prompt"
    )


DECIMALS = (
    "numbers >= 0 in ASCII digits separated by commas, like 0.5,0.2,0.1 (a decimal point and a lowercase "
    "e exponent allowed; no spaces, signs, underscores, empty entries or other scripts' digits)"
)
_DECIMAL = re.compile(r"(?:[0-9]*\.)?[0-9]+(?:e[+-]?[0-9]+)?")  # ASCII only: ``float`` also reads "٠.٥", "1_0", " 5"


def decimal_list(
    name: str,
    value: Any,
    max_items: int,
    *,
    also: str = "",
    error: type[SpecvizError] = InvalidParameterError,
    param: str | None = None,
) -> tuple[float, ...]:
    """``value``, text of ``DECIMALS``, as its finite floats; an entry that overflows to infinity or
    underflows to 0 (``1e-400``: not the number written) is refused, as are more than ``max_items``.
    ``also``: the other values the parameter takes, as its refusals name them (``"'auto' or "``)."""
    allowed = also + DECIMALS
    if not isinstance(value, str) or not value:
        raise _refuse(error, name, allowed, value, param)
    parts = value.split(",")
    if len(parts) > max_items:
        raise about(error(f"{name} has {len(parts)} entries; at most {max_items}."), _param(name, param), name)
    out = []
    for i, part in enumerate(parts, 1):
        if not _DECIMAL.fullmatch(part):
            raise about(error(f"{name} must be {allowed}; entry {i} is {shown(part, 30)}."), _param(name, param), name)
        x = float(part)
        mantissa = part.split("e")[0]
        if not math.isfinite(x) or x == 0 and mantissa.strip("0.") != "":
            why = "overflows to infinity" if not math.isfinite(x) else "underflows to 0 in a float"
            raise about(
                error(f"{name} entry {i} ({shown(part, 30)}) {why}: write a number a float holds."),
                _param(name, param),
                name,
            )
        out.append(x)
    return tuple(out)


def device(value: Any) -> str:
    """A device name specviz can load onto: auto, cpu, cuda or cuda:N (refused with ``ModelLoadError``)."""
    if not isinstance(value, str) or not _DEVICE.fullmatch(value):
        raise _refuse(ModelLoadError, "device", DEVICES, value)
    return value


_WHOLE = re.compile(r"-?[0-9]{1,40}")  # ASCII only: ``int`` also reads "1_000", "+4", " 4 ", "٣" and "４"


class _StatesDefaults(argparse.HelpFormatter):
    """A help formatter that ends each option's help with its default, unless the help already says it
    (``default``) or there is none to say (None, False, suppressed)."""

    @staticmethod
    def _states(action: argparse.Action) -> bool:
        default, text = action.default, action.help or ""
        return (
            bool(action.option_strings)
            and "default" not in text
            and text != argparse.SUPPRESS
            and not (default in (None, False, (), []) or default is argparse.SUPPRESS)
        )

    def _format_action(self, action: argparse.Action) -> str:
        if action.help is None and self._states(action):  # no help text: the default alone
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if not self._states(action):
            return action.help
        return f"{action.help} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose refusals are one line (``error: PROG: argument --flag: expected ..., got
    '...' (see PROG --help)``) and exit code 2, without the usage, and whose ``--help`` states every
    option's default: every command's style (the CLI, the app, the training and bench scripts)."""

    def __init__(self, *args: Any, formatter_class: type = argparse.HelpFormatter, **kwargs: Any) -> None:
        states = type(f"StatesDefaults{formatter_class.__name__}", (_StatesDefaults, formatter_class), {})
        super().__init__(*args, formatter_class=states, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def whole_text(value: str) -> int | None:
    """The int ``value`` writes in the ASCII digits 0-9 (a leading minus allowed, at most 40 digits, nothing
    around them), else None: the one reading of a whole number given as text."""
    return int(value) if isinstance(value, str) and _WHOLE.fullmatch(value) else None


def whole(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: the option's text as an integer in [lo, hi], in ``whole_text``'s grammar;
    anything else is argparse's one-line refusal naming the option with the range (``--repeat 0``:
    "argument --repeat: expected an integer >= 1, got '0'")."""

    def parse(raw: str) -> int:
        value = whole_text(raw)
        how = "" if value is not None else ", written in ASCII digits"
        try:
            return integer("value", value, lo, hi)
        except InvalidParameterError:
            raise argparse.ArgumentTypeError(f"expected an integer{_span(lo, hi)}{how}, got {shown(raw)}") from None

    parse.__name__ = "int"
    return parse


_REAL = re.compile(r"-?" + _DECIMAL.pattern)  # ASCII only: ``float`` also reads "1_0", " 5", "٠.٥", "inf"


def real(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: the option's text as a finite float written in ASCII digits (a leading minus,
    a decimal point and a lowercase e exponent allowed; nothing around it) in [lo, hi] (``(lo, hi]`` with
    ``lo_open``), else argparse's one-line refusal naming the option."""

    def parse(raw: str) -> float:
        x = float(raw) if isinstance(raw, str) and _REAL.fullmatch(raw) else math.nan
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"expected a finite number in ASCII digits, like 0.7, got {shown(raw)}")
        try:
            return number("value", x, lo, hi, lo_open=lo_open)
        except InvalidParameterError as exc:
            allowed = str(exc).removeprefix("value must be ").split(", got ")[0]
            raise argparse.ArgumentTypeError(f"expected {allowed}, got {shown(raw)}") from None

    parse.__name__ = "float"
    return parse


def temperature_text(raw: str) -> float:
    """An argparse ``type``: a temperature in ``real``'s grammar and ``temperature``'s range (0, greedy,
    or [MIN_TEMPERATURE, MAX_TEMPERATURE]), else argparse's one-line refusal naming the option."""
    x = real()(raw)
    try:
        return temperature(x)
    except InvalidParameterError:
        raise argparse.ArgumentTypeError(
            f"expected 0 (greedy) or a number in [{MIN_TEMPERATURE:g}, {MAX_TEMPERATURE:g}], got {shown(raw)}"
        ) from None


temperature_text.__name__ = "temperature"


def one_of(*choices: str) -> Callable[[str], str]:
    """An argparse ``type``: the option's text if it is exactly one of ``choices`` (case and spaces
    count), else argparse's one-line refusal naming the option and the choices."""

    def parse(raw: str) -> str:
        if raw not in choices:
            raise argparse.ArgumentTypeError(f"expected one of {', '.join(choices)}, got {shown(raw)}")
        return raw

    parse.__name__ = "choice"
    return parse


def comma_list(item: Callable[[str], Any]) -> Callable[[str], list]:
    """An argparse ``type``: the option's text as entries separated by commas (no spaces, no empty
    entry), each read by ``item`` (``whole``, ``real``, ``one_of``); a bad entry is refused in one line
    that names the option, the entry's place and ``item``'s reason."""

    def parse(raw: str) -> list:
        out = []
        for i, part in enumerate(raw.split(","), 1):
            try:
                out.append(item(part))
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"entry {i} of the list (commas, no spaces): {exc}") from None
        return out

    parse.__name__ = "list"
    return parse


def true_or_false(text: str) -> bool:
    """An argparse ``type``: a boolean option's value, true/false, yes/no, on/off or 1/0; anything else is
    refused, not read as false."""
    value = {
        "1": True,
        "true": True,
        "yes": True,
        "on": True,
        "0": False,
        "false": False,
        "no": False,
        "off": False,
    }.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value
