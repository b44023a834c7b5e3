"""Unmodified uiautomator2 against the virtual phone through the real adb server."""

from __future__ import annotations

import uiautomator2 as u2

from farm.sim.launcher import SimPhone

CALC = "com.android.calculator2"
NOTES = "dev.agentfarm.notes"


def test_info_window_size_and_current_app(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    info = d.info
    assert info["currentPackageName"] == "com.android.launcher3"
    assert (info["displayWidth"], info["displayHeight"]) == (1080, 2400)
    assert d.window_size() == (1080, 2400)
    d.app_start(CALC)
    assert d.app_current()["package"] == CALC


def test_dump_hierarchy_lists_launcher_icons(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    xml = d.dump_hierarchy()
    assert 'text="Calculator"' in xml and 'resource-id="com.android.launcher3:id/icon"' in xml


def test_calculator_by_selector_clicks(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    d(text="Calculator").click()
    for key in "123×456=":
        d(text=key).click()
    assert d(resourceId=f"{CALC}:id/result").get_text() == "56088"


def test_set_text_send_keys_and_xpath(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    d.app_start(NOTES)
    d(description="新建笔记").click()
    d(resourceId=f"{NOTES}:id/note_body").set_text("first ")
    d.send_keys("second")
    d.xpath('//*[@text="保存"]').click()
    assert d(resourceId=f"{NOTES}:id/note_text").get_text() == "first second"
    d.press("back")
    assert d.app_current()["package"] == "com.android.launcher3"


def test_screenshot_is_a_real_image(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    img = d.screenshot()
    assert img.size == (1080, 2400)
    assert img.convert("L").getextrema()[1] > 200


def test_missing_view_raises_not_found(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    assert not d(text="no such view").exists
    try:
        d(text="no such view").click(timeout=0.1)
    except u2.UiObjectNotFoundError:
        pass
    else:
        raise AssertionError("click on a missing view must raise UiObjectNotFoundError")


def test_unlock_wakes_and_swipes_the_keyguard_away(virtual_phone: SimPhone) -> None:
    d = u2.connect(virtual_phone.serial)
    d.screen_off()
    assert d.info["screenOn"] is False and virtual_phone.state.locked
    d.unlock()
    assert d.info["screenOn"] is True and not virtual_phone.state.locked
    assert d(text="Calculator").exists
