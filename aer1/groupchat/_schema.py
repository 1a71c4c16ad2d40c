"""JSON schema for a tool from its type hints and its Google or NumPy docstring.

Also a small validator for the schema subset produced here, used to check a tool
call's arguments before the tool runs (and before an approval is asked for).
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aer1.errors import UsageError

JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
DOC_TYPE_NAMES: dict[str, str] = {
    "str": "string",
    "string": "string",
    "int": "integer",
    "integer": "integer",
    "float": "number",
    "number": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "dict": "object",
}
GOOGLE_PARAM_HEADERS = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments", "other parameters"}
)
GOOGLE_HEADERS = GOOGLE_PARAM_HEADERS | frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "examples",
        "example",
        "note",
        "notes",
        "attributes",
        "see also",
        "warning",
        "warnings",
        "todo",
        "references",
    }
)
NUMPY_PARAM_HEADERS = frozenset({"parameters", "other parameters"})
MAX_VALIDATION_DEPTH = 32

_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}([\w, *]+?)\s*(?::\s*(.*))?$")
_UNDERLINE = re.compile(r"^-{3,}$")


class ToolDefinitionError(UsageError, TypeError):
    """A function cannot be exposed as a tool (variadic parameter, unsupported type...)."""


@dataclass(frozen=True)
class ParamDoc:
    """What a docstring says about one parameter."""

    type_text: str | None
    description: str


@dataclass(frozen=True)
class Docstring:
    """A parsed docstring: its description and its documented parameters."""

    description: str
    params: dict[str, ParamDoc] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_google_header(line: str) -> bool:
    stripped = line.strip()
    return stripped.endswith(":") and stripped[:-1].strip().lower() in GOOGLE_HEADERS


def _is_numpy_header(lines: list[str], i: int) -> bool:
    return i + 1 < len(lines) and bool(lines[i].strip()) and bool(_UNDERLINE.match(lines[i + 1].strip()))


def _parse_google(lines: list[str], start: int) -> dict[str, ParamDoc]:
    header_indent = _indent(lines[start])
    params: dict[str, ParamDoc] = {}
    entry_indent: int | None = None
    current: list[Any] | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = _indent(line)
        if indent <= header_indent:
            break
        if entry_indent is None:
            entry_indent = indent
        if indent == entry_indent:
            match = _GOOGLE_ENTRY.match(line.strip())
            if match is None:
                current = None
                continue
            current = [match.group(1), match.group(2), [match.group(3)]]
            params[current[0]] = ParamDoc(current[1], "")
        elif current is not None:
            current[2].append(line.strip())
        if current is not None:
            params[current[0]] = ParamDoc(current[1], " ".join(p for p in current[2] if p))
    return params


def _parse_numpy(lines: list[str], start: int) -> dict[str, ParamDoc]:
    header_indent = _indent(lines[start])
    params: dict[str, ParamDoc] = {}
    names: list[str] = []
    type_text: str | None = None
    description: list[str] = []

    def flush() -> None:
        for name in names:
            params[name] = ParamDoc(type_text, " ".join(description))

    i = start + 2
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _is_numpy_header(lines, i):
            break
        if _indent(line) <= header_indent:
            flush()
            match = _NUMPY_ENTRY.match(line.strip())
            names = [n.strip().lstrip("*") for n in match.group(1).split(",")] if match else []
            type_text = match.group(2) if match else None
            description = []
        else:
            description.append(line.strip())
        i += 1
    flush()
    return params


def parse_docstring(doc: str | None) -> Docstring:
    """Parse a Google- or NumPy-style docstring into a description and parameter docs."""
    if not doc:
        return Docstring("")
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, ParamDoc] = {}
    end = len(lines)
    for i, line in enumerate(lines):
        if _is_google_header(line) or _is_numpy_header(lines, i):
            end = min(end, i)
        if _is_google_header(line) and line.strip()[:-1].strip().lower() in GOOGLE_PARAM_HEADERS:
            params.update(_parse_google(lines, i))
        elif _is_numpy_header(lines, i) and line.strip().lower() in NUMPY_PARAM_HEADERS:
            params.update(_parse_numpy(lines, i))
    paragraphs: list[str] = []
    current: list[str] = []
    for line in lines[:end]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return Docstring("\n\n".join(paragraphs), params)


def _doc_type_schema(type_text: str | None) -> dict[str, Any]:
    if not type_text:
        return {}
    base = type_text.split(",")[0].strip().lower()
    json_type = DOC_TYPE_NAMES.get(base)
    return {"type": json_type} if json_type else {}


def type_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema for one type annotation (the subset tools need)."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return {}
    if annotation is None or annotation is type(None):
        return {"type": "null"}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [member.value for member in annotation]}
    if annotation in JSON_TYPES:
        return {"type": JSON_TYPES[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        schema = type_schema(args[0])
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if origin is typing.Union or origin is types.UnionType:
        options = [type_schema(a) for a in args]
        return {"anyOf": options}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if annotation in (list, Sequence, set, frozenset) or origin in (list, Sequence, set, frozenset):
        return {"type": "array", "items": type_schema(args[0])} if args else {"type": "array"}
    if annotation is tuple or origin is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0])}
        return {
            "type": "array",
            "prefixItems": [type_schema(a) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if annotation in (dict, Mapping) or origin in (dict, Mapping):
        if args:
            if args[0] is not str:
                raise ToolDefinitionError(f"object keys must be str, not {args[0]!r}")
            return {"type": "object", "additionalProperties": type_schema(args[1])}
        return {"type": "object"}
    raise ToolDefinitionError(f"unsupported parameter type {annotation!r}")


def function_schema(
    function: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> dict[str, Any]:
    """The tool schema of ``function``: name, description and JSON schema parameters.

    Types come from the annotations (falling back to the docstring's type when a
    parameter has none); descriptions come from a Google or NumPy docstring.
    """
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as e:  # unresolvable forward references and the like
        raise ToolDefinitionError(f"cannot resolve the type hints of {function!r}: {e}") from e
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as e:
        raise ToolDefinitionError(f"cannot read the signature of {function!r}: {e}") from e
    doc = parse_docstring(inspect.getdoc(function))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"parameter *{pname} cannot be passed as a JSON object member")
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(f"parameter {pname} is positional-only")
        pdoc = doc.params.get(pname)
        if pname in hints:
            schema = type_schema(hints[pname])
        else:
            schema = _doc_type_schema(pdoc.type_text if pdoc else None)
        if pdoc and pdoc.description and "description" not in schema:
            schema["description"] = pdoc.description
        if param.default is param.empty:
            required.append(pname)
        elif param.default is None or isinstance(param.default, (str, int, float, bool)):
            schema["default"] = param.default.value if isinstance(param.default, enum.Enum) else param.default
        properties[pname] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    fname = name or getattr(function, "__name__", None)
    if not fname or fname == "<lambda>":
        raise ToolDefinitionError("a tool needs a name: pass one for a lambda or a callable object")
    return {
        "name": fname,
        "description": description if description is not None else doc.description,
        "parameters": parameters,
    }


def _type_ok(json_type: str, value: Any) -> bool:
    if json_type == "string":
        return isinstance(value, str)
    if json_type == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if json_type == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if json_type == "boolean":
        return isinstance(value, bool)
    if json_type == "null":
        return value is None
    if json_type == "array":
        return isinstance(value, list)
    if json_type == "object":
        return isinstance(value, dict)
    return True


def json_type_name(value: Any) -> str:
    for json_type in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _type_ok(json_type, value):
            return json_type
    return type(value).__name__


def validate(schema: Mapping[str, Any], value: Any, path: str = "arguments", depth: int = 0) -> list[str]:
    """Problems with ``value`` under ``schema`` (the subset made here); [] when it fits."""
    if depth > MAX_VALIDATION_DEPTH:
        return [f"{path}: nested too deeply"]
    if "anyOf" in schema:
        if any(not validate(option, value, path, depth + 1) for option in schema["anyOf"]):
            return []
        return [f"{path}: {json_type_name(value)} matches none of the allowed types"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{path}: {value!r} is not one of {schema['enum']!r}"]
    json_type = schema.get("type")
    if isinstance(json_type, str) and not _type_ok(json_type, value):
        return [f"{path}: expected {json_type}, got {json_type_name(value)}"]
    problems: list[str] = []
    if isinstance(value, list):
        prefix = schema.get("prefixItems")
        if prefix is not None:
            if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
                problems.append(f"{path}: expected {len(prefix)} items, got {len(value)}")
            for i, (item_schema, item) in enumerate(zip(prefix, value, strict=False)):
                problems += validate(item_schema, item, f"{path}[{i}]", depth + 1)
        elif "items" in schema:
            for i, item in enumerate(value):
                problems += validate(schema["items"], item, f"{path}[{i}]", depth + 1)
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(f"{path}: missing required member {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                problems += validate(properties[key], item, f"{path}.{key}", depth + 1)
            elif extra is False:
                problems.append(f"{path}: unexpected member {key!r}")
            elif isinstance(extra, Mapping):
                problems += validate(extra, item, f"{path}.{key}", depth + 1)
    return problems
