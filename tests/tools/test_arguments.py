"""The schema check's reading of `additionalProperties: false`: it closes an object whose
`properties` are listed; one with none listed (mcphub's `tool_input`) is free-form."""

from codecompanion_py.tools.arguments import problems

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "free": {"type": "object", "additionalProperties": False},
        "closed": {"type": "object", "properties": {}, "additionalProperties": False},
    },
    "additionalProperties": False,
}


def test_a_listed_object_is_closed_and_an_unlisted_one_is_free_form():
    assert problems({"name": "x", "free": {"text": "ping"}}, SCHEMA) == []
    assert problems({"name": "x", "closed": {"text": "ping"}}, SCHEMA) == [
        "`closed` has an unknown field `text` (expected: none)"
    ]
    assert problems({"name": "x", "other": 1}, SCHEMA) == [
        "arguments has an unknown field `other` (expected: name, free, closed)"
    ]
