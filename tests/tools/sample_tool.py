"""A Python user tool, loaded by module path in the registry tests."""

schema = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def forecast(self, args, input, output_handler):
    return {"status": "success", "data": f"Sunny in {args['city']}"}


weather = {"name": "weather", "schema": schema, "cmds": [forecast], "opts": {"requires_approval": False}}
