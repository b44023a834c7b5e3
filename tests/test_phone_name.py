"""A phone's one name (`farm.phone_name`): the farm.yaml label, else model and short serial, whatever the other
phones are."""

from __future__ import annotations

from farm.config import FarmConfig
from farm.phone_name import from_manifests, phone_name, phone_names, short_serial


def test_the_short_serial_keeps_what_tells_a_phone_apart() -> None:
    assert short_serial("127.0.0.1:45949") == "45949"
    assert short_serial("emulator-5554") == "5554"
    assert short_serial("192.168.1.23:5555") == "192.168.1.23:5555"
    assert short_serial("R58M1234ABCD") == "4ABCD"
    assert short_serial("SER1") == "SER1"
    assert short_serial("adb-R58M1234ABCD-Xy12._adb-tls-connect._tcp") == "4ABCD"
    assert short_serial("emulator-5554@10.0.0.2:5037") == "5554@10.0.0.2:5037"


def test_a_phone_has_the_same_name_whatever_other_phones_there_are() -> None:
    alone = phone_names([("127.0.0.1:45949", "Pixel 7")])
    nightly = phone_names([(f"127.0.0.1:{p}", "Pixel 7") for p in (41000, 42000, 43000, 44000, 45000, 45949)])
    assert alone["127.0.0.1:45949"] == nightly["127.0.0.1:45949"] == "Pixel 7 · 45949"


def test_two_phones_of_one_model_get_different_names() -> None:
    names = phone_names([("127.0.0.1:5555", "Pixel 7"), ("127.0.0.1:5556", "Pixel 7")])
    assert names == {"127.0.0.1:5555": "Pixel 7 · 5555", "127.0.0.1:5556": "Pixel 7 · 5556"}
    # Serials whose short forms meet keep their whole serial, so the names still differ.
    clash = phone_names([("AAAA1234ABCD", "Pixel 7"), ("BBBB1234ABCD", "Pixel 7")])
    assert clash == {"AAAA1234ABCD": "Pixel 7 · AAAA1234ABCD", "BBBB1234ABCD": "Pixel 7 · BBBB1234ABCD"}


def test_one_serial_on_two_hosts_is_two_names() -> None:
    names = phone_names([("emulator-5554@10.0.0.2:5037", "sdk"), ("emulator-5554@10.0.0.3:5037", "sdk")])
    assert names == {"emulator-5554@10.0.0.2:5037": "sdk · 5554@10.0.0.2:5037",
                     "emulator-5554@10.0.0.3:5037": "sdk · 5554@10.0.0.3:5037"}


def test_a_farm_yaml_label_wins() -> None:
    cfg = FarmConfig.model_validate({"phone_labels": {"R58M1234ABCD": "Bench A (cracked screen)"}})
    assert phone_name("R58M1234ABCD", "Galaxy S24", cfg.phone_labels) == "Bench A (cracked screen)"
    assert phone_name("R58M1234ABCD@10.0.0.2:5037", "Galaxy S24", cfg.phone_labels) == "Bench A (cracked screen)"
    assert phone_name("OTHER123456", "Galaxy S24", cfg.phone_labels) == "Galaxy S24 · 23456"
    # Two phones the operator labelled alike are still told apart.
    same = phone_names([("A1", "x"), ("B2", "x")], {"A1": "Bench", "B2": "Bench"})
    assert same == {"A1": "Bench · A1", "B2": "Bench · B2"}


def test_a_run_recorded_before_names_gets_them_computed_from_its_model_and_labels() -> None:
    old = {"config": {"phone_labels": {"S2": "Shelf 2"}},
           "phones": [{"serial": "127.0.0.1:45949", "model": "Pixel 7", "adb_server": "127.0.0.1:5037"},
                      {"serial": "S2", "model": "Pixel 7"}]}
    new = {"phones": [{"serial": "127.0.0.1:45949", "model": "Pixel 7", "name": "Desk phone"}]}
    ids = from_manifests([old], [("R1", None)])
    assert {s: (p.name, p.server) for s, p in ids.items()} == {
        "127.0.0.1:45949": ("Pixel 7 · 45949", "127.0.0.1:5037"), "S2": ("Shelf 2", ""), "R1": ("device · R1", "")}
    # A later run's recorded name wins; the server it did not record is the earlier run's.
    later = from_manifests([old, new])["127.0.0.1:45949"]
    assert (later.name, later.server) == ("Desk phone", "127.0.0.1:5037")
