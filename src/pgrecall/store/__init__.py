"""Every SQL statement of the product, owner-scoped, returning domain types."""
