"""Built-in HTTP adapters, one module per wire format or provider; each exports `ADAPTER`."""
