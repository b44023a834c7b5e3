"""UiDevice: hierarchy formats, input routing, keys, lock screen, scrolling and screenshots."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from PIL import Image

from farm.sim.ui import keycode
from tests.helpers.sim_apps import fill_new, find, make_phone, open_app, relaunch, tap, texts, texts_of

NOTES = "dev.agentfarm.notes"
CALC = "com.android.calculator2"
DECL = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
ATTR_ORDER = [
    "index", "text", "resource-id", "class", "package", "content-desc", "checkable", "checked", "clickable",
    "enabled", "focusable", "focused", "scrollable", "long-clickable", "password", "selected", "bounds",
    "drawing-order", "hint", "display-id",
]


def test_dump_is_one_line_in_uiautomator_format(tmp_path: Path) -> None:
    xml = make_phone(tmp_path).ui.hierarchy_xml()
    assert xml.startswith(DECL + '<hierarchy rotation="0"><node index="0" text="" resource-id="" '
                          'class="android.widget.FrameLayout" package="com.android.launcher3"')
    assert "\n" not in xml
    first = re.search(r"<node ([^>]*?)>", xml)
    assert first is not None
    assert re.findall(r'([\w-]+)="', first.group(1)) == ATTR_ORDER


def test_jar_dump_is_indented_and_has_visible_to_user(tmp_path: Path) -> None:
    xml = make_phone(tmp_path).ui.hierarchy_xml("jar")
    assert xml.startswith(DECL + '\r\n<hierarchy rotation="0">\r\n  <node index="0"')
    assert 'visible-to-user="true"' in xml
    root = ET.fromstring(xml.split("?>", 1)[1].strip())
    assert root.tag == "hierarchy" and len(root) == 2


def test_dump_escapes_text(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    fill_new(ui, "新建笔记", 'a<b & "c"')
    root = ET.fromstring(ui.hierarchy_xml().split("?>", 1)[1])
    assert 'a<b & "c"' in [n.get("text") for n in root.iter("node")]


def test_status_bar_shows_battery_level(tmp_path: Path) -> None:
    ui = make_phone(tmp_path).ui
    assert find(ui, rid="com.android.systemui:id/battery_percentage_view").text == "80%"


def test_back_leaves_app_and_home_goes_to_launcher(tmp_path: Path) -> None:
    ui = open_app(tmp_path, "com.android.settings")
    tap(ui, text="关于手机")
    ui.key("KEYCODE_BACK")
    assert find(ui, rid="com.android.settings:id/title").text == "设置"
    ui.key(4)
    assert ui.foreground()[0] == "com.android.launcher3"
    ui.launch("com.android.settings")
    ui.key("home")
    assert ui.foreground()[0] == "com.android.launcher3"


def test_launch_refuses_uninstalled_package(tmp_path: Path) -> None:
    ui = make_phone(tmp_path).ui
    assert ui.launch("com.example.missing") is False
    assert ui.foreground()[0] == "com.android.launcher3"


def test_force_stop_loses_unsaved_state(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CALC)
    tap(ui, text="7")
    ui.key("home")
    ui.launch(CALC)
    assert find(ui, rid=f"{CALC}:id/formula").text == "7"
    relaunch(ui, CALC)
    assert find(ui, rid=f"{CALC}:id/formula").text == ""


def test_del_and_keycode_digits_edit_the_focused_field(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    fill_new(ui, "新建笔记", "abc", save=False)
    ui.key("del")
    ui.key("KEYCODE_7")
    assert find(ui, rid=f"{NOTES}:id/note_title_input").text == "ab7"


def test_empty_field_shows_hint_as_text(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    tap(ui, desc="新建笔记")
    title = find(ui, rid=f"{NOTES}:id/note_title_input")
    body = find(ui, rid=f"{NOTES}:id/note_body")
    assert title.text == title.hint == "标题" and title.focused
    assert body.text == body.hint == "输入笔记内容" and not body.focused


def test_sleep_locks_and_swipe_up_unlocks(tmp_path: Path) -> None:
    phone = make_phone(tmp_path)
    ui = phone.ui
    ui.key("sleep")
    assert not phone.screen_on and phone.locked
    assert ui.tap(540, 1200) is False
    ui.key("KEYCODE_WAKEUP")
    assert phone.screen_on and "上滑即可解锁" in texts(ui)
    ui.swipe(540, 2000, 540, 600, 300)
    assert not phone.locked
    assert ui.foreground()[0] == "com.android.launcher3" and "Calculator" in texts(ui)


def test_menu_key_dismisses_insecure_keyguard(tmp_path: Path) -> None:
    phone = make_phone(tmp_path)
    phone.locked = True
    phone.ui.key(82)
    assert not phone.locked


def test_swipe_scrolls_a_long_list(tmp_path: Path) -> None:
    ui = open_app(tmp_path, "dev.agentfarm.shop")
    first = texts_of(ui, "dev.agentfarm.shop:id/product_name")
    assert first[0] == "无线蓝牙耳机"
    ui.swipe(540, 1800, 540, 600, 300)
    after = texts_of(ui, "dev.agentfarm.shop:id/product_name")
    assert after[0] != "无线蓝牙耳机" and after[-1] == "电动牙刷"


def test_app_switch_shows_recents_and_returns(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CALC)
    ui.launch(NOTES)
    ui.key("app_switch")
    assert texts_of(ui, "com.android.launcher3:id/task_title") == ["Notes", "Calculator"]
    tap(ui, text="Calculator")
    assert ui.foreground()[0] == CALC


def test_keycode_names() -> None:
    assert keycode("KEYCODE_BACK") == 4 and keycode("back") == 4 and keycode("66") == 66
    assert keycode("recent") == 187 and keycode("KEYCODE_WAKEUP") == 224
    assert keycode("no_such_key") is None


def test_screenshot_png_and_jpeg_have_screen_size(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CALC)
    png = Image.open(io.BytesIO(ui.screenshot_png()))
    jpeg = Image.open(io.BytesIO(ui.screenshot_jpeg(60)))
    assert png.format == "PNG" and jpeg.format == "JPEG"
    assert png.size == jpeg.size == (1080, 2400)


def test_screenshot_is_black_when_screen_off(tmp_path: Path) -> None:
    ui = make_phone(tmp_path).ui
    ui.key("sleep")
    img = Image.open(io.BytesIO(ui.screenshot_png())).convert("L")
    assert img.getextrema() == (0, 0)


def test_screenshot_draws_something(tmp_path: Path) -> None:
    ui = make_phone(tmp_path).ui
    img = Image.open(io.BytesIO(ui.screenshot_png())).convert("L")
    histogram = img.histogram()
    assert sum(histogram[:100]) > 0 and sum(histogram[200:]) > 0
