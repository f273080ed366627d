"""The English names of months and weekdays, lower-case: what a search reads as a date ("in
May", "last Saturday") and what a dream pass does not take for a name ("on Mondays")."""

from __future__ import annotations

MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
