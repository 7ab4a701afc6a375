"""Framework-free Python shared by every layer: no Django import (enforced by import-linter)."""
