"""Schemas: fields as plain data, schema files, binding to codecs, records to Example bytes,
Record classes and compatibility between schemas."""
