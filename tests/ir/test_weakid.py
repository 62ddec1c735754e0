"""``WeakIdTable``: values found by their key's identity, for as long as the key lives —
never another object's that took a dead key's id, and never keeping a key alive."""

from __future__ import annotations

import gc

from hpvm.ir.weakid import WeakIdTable


class Key:
    """A weakly referable object that compares equal to every other (identity must decide)."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]  # (unhashable: the table must not hash keys)


def test_values_are_found_by_identity_only() -> None:
    table: WeakIdTable[Key, str] = WeakIdTable()
    a, b = Key(), Key()
    assert table.set(a, "a") == "a"
    assert table.get(a) == "a" and table.get(b) is None
    table.set(a, "again")
    assert table.get(a) == "again" and len(table) == 1
    table.pop(b)  # (not there: nothing happens)
    assert table.get(a) == "again"
    table.pop(a)
    assert table.get(a) is None and len(table) == 0


def test_an_entry_leaves_with_its_key_and_a_reused_id_finds_nothing() -> None:
    table: WeakIdTable[Key, list[int]] = WeakIdTable()
    key = Key()
    table.set(key, [1])
    del key
    gc.collect()
    assert len(table) == 0
    # an entry under another object's id (as if that id had been a dead key's) is not used
    a, b = Key(), Key()
    table.set(a, [2])
    table.items[id(b)] = table.items[id(a)]
    assert table.get(b) is None and table.get(a) == [2]


def test_a_replaced_entry_is_not_removed_by_the_earlier_reference_s_callback() -> None:
    table: WeakIdTable[Key, str] = WeakIdTable()
    key = Key()
    table.set(key, "first")
    table.set(key, "second")  # the first entry's weak reference is dropped with it
    gc.collect()
    assert table.get(key) == "second"
    del key
    gc.collect()
    assert len(table) == 0


def test_the_table_does_not_keep_its_keys_alive() -> None:
    table: WeakIdTable[Key, int] = WeakIdTable()
    keys = [Key() for _ in range(10)]
    for i, k in enumerate(keys):
        table.set(k, i)
    assert [table.get(k) for k in keys] == list(range(10))
    del keys, k
    gc.collect()
    assert len(table) == 0
