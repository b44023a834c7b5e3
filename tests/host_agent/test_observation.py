from hypothesis import example, given
from hypothesis import strategies as st

from host_agent.observation import observe_xml
from tests.helpers.host import hierarchy, node


def _reordered(xml: str) -> str:
    # Same content, attributes in another order: not the jar's layout, so the expat path runs.
    return xml.replace('<node index="0" ', '<node ').replace("/>", ' index="0" />')


def test_line_format_has_ref_class_text_desc_id_and_flags() -> None:
    xml = hierarchy(
        node("OK", cls="android.widget.Button", rid="dev.app:id/ok", desc="Confirm", clickable=True, selected="true")
    )
    assert observe_xml(xml).text.splitlines()[1] == '[1] Button "OK" desc="Confirm" (ok) click selected'


def test_header_names_foreground_package_and_activity() -> None:
    obs = observe_xml(hierarchy(node("x")), package="dev.app", activity=".Main")
    assert obs.text.splitlines()[0] == "app: dev.app/.Main"


def test_layout_only_invisible_and_empty_nodes_are_dropped() -> None:
    flat = node("flat", bounds="[0,10][100,10]")
    xml = hierarchy(node(""), node("hidden", visible_to_user="false"), flat, node("kept"))
    obs = observe_xml(xml)
    assert obs.text.splitlines()[1:] == ['[1] TextView "kept"']


def test_checkable_edit_disabled_and_password_flags() -> None:
    xml = hierarchy(
        node("Wi-Fi", cls="android.widget.Switch", checkable="true", checked="true"),
        node("", cls="android.widget.EditText", password="true", enabled="false"),
    )
    lines = observe_xml(xml).text.splitlines()[1:]
    assert lines == ['[1] Switch "Wi-Fi" checked', "[2] EditText edit disabled password"]


def test_entities_are_decoded_and_quotes_kept_on_one_line() -> None:
    obs = observe_xml(hierarchy(node('Tom & "Jerry"')))
    assert obs.text.splitlines()[1] == "[1] TextView \"Tom & 'Jerry'\""
    assert obs.nodes[0].text == 'Tom & "Jerry"'


def test_other_attribute_orders_give_the_same_text() -> None:
    xml = hierarchy(node("a", clickable=True, rid="p:id/x"), node("", desc="icon"), node("b", scrollable="true"))
    assert _reordered(xml) != xml
    assert observe_xml(_reordered(xml)).text == observe_xml(xml).text


def test_refs_resolve_to_node_centres() -> None:
    obs = observe_xml(hierarchy(node("a", bounds="[0,0][10,10]"), node("b", bounds="[100,200][300,400]")))
    node_b = obs.node(2)
    assert node_b is not None and node_b.center == (200, 300)
    assert obs.node(3) is None


def test_find_by_text_id_desc_and_substring() -> None:
    obs = observe_xml(hierarchy(node("Save", rid="dev.notes:id/save"), node("", desc="More"), node("Total: 42")))
    assert [n.ref for n in (
        obs.find(text="Save"), obs.find(resource_id="save"), obs.find(desc="More"), obs.find(contains="42")
    ) if n] == [1, 1, 2, 3]


def test_equal_screens_have_equal_digests() -> None:
    xml = hierarchy(node("a"))
    assert observe_xml(xml).digest == observe_xml(xml).digest != observe_xml(hierarchy(node("b"))).digest


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from('&"<> '), max_size=12)


@given(st.lists(st.tuples(_TEXT, _TEXT, st.booleans(), st.booleans(), st.booleans()), min_size=1, max_size=12))
@example([("", "<\xa0", False, False, False)])  # an entity next to a non-printable space
@example([("<  a", "", False, False, False)])
def test_fast_path_and_expat_agree(specs: list[tuple[str, str, bool, bool, bool]]) -> None:
    nodes = [
        node(text, desc=desc, clickable=click, checkable="true" if check else "false",
             visible_to_user="false" if hidden else "true")
        for text, desc, click, check, hidden in specs
    ]
    xml = hierarchy(*nodes)
    fast, slow = observe_xml(xml), observe_xml(_reordered(xml))
    assert fast.text == slow.text
    assert [n.text for n in fast.nodes] == [n.text for n in slow.nodes]
