"""Tool JSON schema from type hints and Google or NumPy docstrings; argument validation."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest

from aer1.groupchat import ToolDefinitionError, function_schema
from aer1.groupchat._schema import parse_docstring, validate


class Unit(enum.Enum):
    """Temperature units."""

    C = "celsius"
    F = "fahrenheit"


def google_style(city: str, days: int = 3, unit: Unit = Unit.C, tags: list[str] | None = None) -> str:
    """Forecast the weather.

    Uses the cached forecast when there is one.

    Args:
        city (str): The city to look up.
        days: How many days,
            counted from today.
        unit: Temperature unit.
        tags (list[str], optional): Extra labels.

    Returns:
        str: The forecast.
    """
    return city


def numpy_style(path, mode: Literal["r", "w"] = "r", sizes: dict[str, float] | None = None):  # type: ignore[no-untyped-def]
    """Open a file.

    Parameters
    ----------
    path : str
        Where the file is.
    mode : {"r", "w"}
        Read or write.
    sizes : dict, optional
        Known sizes by name,
        in bytes.

    Returns
    -------
    str
        The content.
    """
    return path


def test_google_docstring_and_type_hints() -> None:
    assert function_schema(google_style) == {
        "name": "google_style",
        "description": "Forecast the weather.\n\nUses the cached forecast when there is one.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city to look up."},
                "days": {"type": "integer", "description": "How many days, counted from today.", "default": 3},
                "unit": {"enum": ["celsius", "fahrenheit"], "description": "Temperature unit."},
                "tags": {
                    "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                    "description": "Extra labels.",
                    "default": None,
                },
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    }


def test_numpy_docstring_with_a_type_only_in_the_docstring() -> None:
    assert function_schema(numpy_style, name="open_file") == {
        "name": "open_file",
        "description": "Open a file.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Where the file is."},
                "mode": {"enum": ["r", "w"], "description": "Read or write.", "default": "r"},
                "sizes": {
                    "anyOf": [{"type": "object", "additionalProperties": {"type": "number"}}, {"type": "null"}],
                    "description": "Known sizes by name, in bytes.",
                    "default": None,
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    }


def test_annotated_description_and_tuples() -> None:
    def f(point: tuple[int, int], label: Annotated[str, "A short label."], rest: tuple[float, ...] = ()) -> None:
        """Place a point."""

    props = function_schema(f)["parameters"]["properties"]
    assert props["point"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "integer"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert props["label"] == {"type": "string", "description": "A short label."}
    assert props["rest"] == {"type": "array", "items": {"type": "number"}}


def test_docstring_parser_keeps_sections_apart() -> None:
    doc = parse_docstring(google_style.__doc__)
    assert set(doc.params) == {"city", "days", "unit", "tags"}
    assert doc.params["tags"].type_text == "list[str], optional"
    numpy = parse_docstring(numpy_style.__doc__)
    assert set(numpy.params) == {"path", "mode", "sizes"}
    assert numpy.params["path"].type_text == "str"
    assert parse_docstring(None).description == ""


@pytest.mark.parametrize(
    ("function", "words"),
    [
        (lambda x: x, "needs a name"),
        (max, "signature"),
    ],
)
def test_functions_that_cannot_be_tools(function: Any, words: str) -> None:
    with pytest.raises(ToolDefinitionError, match=words):
        function_schema(function)


def test_variadic_and_unsupported_parameters_are_refused() -> None:
    def star(*values: int) -> None:
        """Variadic."""

    def kw(**values: int) -> None:
        """Keywords."""

    def odd(x: complex) -> None:
        """Complex."""

    def keys(x: dict[int, str]) -> None:
        """Int keys."""

    for function, words in ((star, r"\*values"), (kw, r"\*values"), (odd, "unsupported"), (keys, "keys must be str")):
        with pytest.raises(ToolDefinitionError, match=words):
            function_schema(function)


def test_validate_reports_every_problem_with_a_path() -> None:
    schema = function_schema(google_style)["parameters"]
    assert validate(schema, {"city": "Oslo"}) == []
    assert validate(schema, {"city": "Oslo", "days": 2, "unit": "fahrenheit", "tags": ["a"]}) == []
    assert validate(schema, {"days": True, "unit": "kelvin", "tags": [1], "extra": 0}) == [
        "arguments: missing required member 'city'",
        "arguments.days: expected integer, got boolean",
        "arguments.unit: 'kelvin' is not one of ['celsius', 'fahrenheit']",
        "arguments.tags: array matches none of the allowed types",
        "arguments: unexpected member 'extra'",
    ]
    point = function_schema(lambda point: None, name="p")["parameters"]
    assert validate(point, {"point": object()}) == []  # no annotation, no docstring: anything goes
