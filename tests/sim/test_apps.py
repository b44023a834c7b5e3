"""The simulated apps change state only through taps, text and keys, and keep what they save."""

from __future__ import annotations

from pathlib import Path

from farm.sim.apps.calculator import evaluate, format_number
from farm.sim.profile import default_profile
from tests.helpers.sim_apps import (
    calculator_after,
    fill_new,
    find,
    long_press,
    make_phone,
    nodes,
    open_app,
    relaunch,
    tap,
    texts,
    texts_of,
)

CALC = "com.android.calculator2"
RESULT = f"{CALC}:id/result"
FORMULA = f"{CALC}:id/formula"
NOTES = "dev.agentfarm.notes"
CLOCK = "com.android.deskclock"
SHOP = "dev.agentfarm.shop"
MSG = "dev.agentfarm.messenger"
CONTACTS = "com.android.contacts"
CALENDAR = "com.android.calendar"
FILES = "com.android.documentsui"
SETTINGS = "com.android.settings"
BROWSER = "dev.agentfarm.browser"
WEATHER = "dev.agentfarm.weather"


def test_launcher_shows_an_icon_per_launchable_app(tmp_path: Path) -> None:
    ui = make_phone(tmp_path).ui
    icons = {n.text for n in nodes(ui) if n.rid == "com.android.launcher3:id/icon"}
    expected = {p.label for p in ui.phone.profile.packages if p.launcher_activity}
    assert icons == expected


def test_tapping_a_launcher_icon_opens_the_app(tmp_path: Path) -> None:
    ui = make_phone(tmp_path).ui
    tap(ui, text="Calculator")
    assert ui.foreground() == (CALC, f"{CALC}.Calculator")


def test_calculator_multiplies_by_taps(tmp_path: Path) -> None:
    ui = calculator_after(tmp_path, "123×456=")
    assert find(ui, rid=RESULT).text == "56088"
    assert find(ui, rid=FORMULA).text == "123×456"


def test_calculator_precedence_and_division() -> None:
    assert format_number(evaluate("2+3×4")) == "14"
    assert format_number(evaluate("10÷4")) == "2.5"
    assert format_number(evaluate("1÷3")) == "0.333333333333"
    assert format_number(evaluate("5−8")) == "−3"


def test_calculator_divide_by_zero_shows_message(tmp_path: Path) -> None:
    ui = calculator_after(tmp_path, "7÷0=")
    assert find(ui, rid=RESULT).text == "不能除以 0"


def test_calculator_clear_resets(tmp_path: Path) -> None:
    ui = calculator_after(tmp_path, "9+1=C")
    assert find(ui, rid=RESULT).text == ""
    assert find(ui, rid=FORMULA).text == ""


def test_notes_saved_note_survives_force_stop(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    fill_new(ui, "新建笔记", "AF-R1-note", {f"{NOTES}:id/note_body": "牛奶、鸡蛋"})
    relaunch(ui, NOTES)
    assert find(ui, rid=f"{NOTES}:id/note_title").text == "AF-R1-note"
    assert find(ui, rid=f"{NOTES}:id/note_text").text == "牛奶、鸡蛋"


def test_notes_start_with_sample_notes_newest_first(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    assert texts_of(ui, f"{NOTES}:id/note_title") == ["会议纪要", "读书清单"]


def test_notes_back_discards_unsaved_text(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    fill_new(ui, "新建笔记", "never saved", save=False)
    ui.key("back")
    assert "never saved" not in texts(ui)
    assert ui.foreground()[1].endswith("MainActivity")


def test_notes_delete_removes_note(tmp_path: Path) -> None:
    ui = open_app(tmp_path, NOTES)
    tap(ui, text="读书清单")
    tap(ui, text="删除")
    assert "读书清单" not in texts(ui) and "会议纪要" in texts(ui)


def test_clock_add_alarm_with_label_persists(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CLOCK)
    fill_new(ui, "添加闹钟", "6:45", {f"{CLOCK}:id/edit_label": "晨跑"})
    relaunch(ui, CLOCK)
    shown = texts(ui)
    assert "上午6:45" in shown and "晨跑" in shown


def test_clock_rejects_invalid_time(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CLOCK)
    fill_new(ui, "添加闹钟", "25:99")
    assert ui.foreground()[1].endswith("AlarmEditActivity")
    assert ui.last_toast is not None and "有效的时间" in ui.last_toast


def test_contacts_new_contact_is_saved(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CONTACTS)
    fill_new(ui, "新建联系人", "赵六", {f"{CONTACTS}:id/phone": "186 1234 5678"})
    relaunch(ui, CONTACTS)
    assert "赵六" in texts(ui)


def test_files_lists_real_storage_and_creates_folder(tmp_path: Path) -> None:
    phone = make_phone(tmp_path)
    (phone.host_path("/sdcard/Download") / "report.pdf").write_bytes(b"%PDF")
    ui = phone.ui
    ui.launch(FILES)
    assert {"Download", "DCIM", "Android"} <= set(texts(ui))
    tap(ui, text="新建文件夹")
    ui.input_text("Trip-R1")
    tap(ui, text="确定")
    assert phone.host_path("/sdcard/Trip-R1").is_dir()
    assert "Trip-R1" in texts(ui)
    tap(ui, text="Download")
    assert "report.pdf" in texts(ui)


def test_shop_lists_products_with_prices(tmp_path: Path) -> None:
    ui = open_app(tmp_path, SHOP)
    names = texts_of(ui, f"{SHOP}:id/product_name")
    prices = texts_of(ui, f"{SHOP}:id/product_price")
    assert names and len(names) == len(prices)
    assert all(p.startswith("¥") for p in prices)


def test_shop_orders_are_behind_a_login_wall(tmp_path: Path) -> None:
    ui = open_app(tmp_path, SHOP)
    tap(ui, text="我的订单")
    shown = texts(ui)
    assert "登录" in shown and "账号" in shown and "密码" in shown and "验证码" in shown
    tap(ui, rid=f"{SHOP}:id/account")
    ui.input_text("user")
    tap(ui, rid=f"{SHOP}:id/captcha")
    ui.input_text("1234")
    tap(ui, rid=f"{SHOP}:id/login")
    assert ui.foreground()[1].endswith("LoginActivity")


def test_shop_signed_in_profile_sees_orders(tmp_path: Path) -> None:
    profile = default_profile()
    profile.signed_in.append(SHOP)
    ui = open_app(tmp_path, SHOP, profile)
    tap(ui, text="我的订单")
    assert "暂无订单" in texts(ui)


def test_messenger_send_shows_confirmation_card_first(tmp_path: Path) -> None:
    ui = open_app(tmp_path, MSG)
    tap(ui, text="文件传输助手")
    ui.input_text("hello R1")
    tap(ui, rid=f"{MSG}:id/send")
    assert find(ui, rid=f"{MSG}:id/confirm_action").text == "操作:发送消息"
    assert find(ui, rid=f"{MSG}:id/confirm_target").text == "对象:文件传输助手"
    assert find(ui, rid=f"{MSG}:id/confirm_content").text == "内容:hello R1"
    assert not any(n.rid == f"{MSG}:id/msg_text" and n.text == "hello R1" for n in nodes(ui))
    tap(ui, rid=f"{MSG}:id/confirm_ok")
    assert any(n.rid == f"{MSG}:id/msg_text" and n.text == "hello R1" for n in nodes(ui))


def test_messenger_cancel_does_not_send(tmp_path: Path) -> None:
    ui = open_app(tmp_path, MSG)
    tap(ui, text="文件传输助手")
    ui.input_text("draft")
    tap(ui, rid=f"{MSG}:id/send")
    tap(ui, rid=f"{MSG}:id/confirm_cancel")
    relaunch(ui, MSG)
    tap(ui, text="文件传输助手")
    assert texts_of(ui, f"{MSG}:id/msg_text") == []


def test_settings_about_phone_shows_profile_model_and_release(tmp_path: Path) -> None:
    profile = default_profile()
    profile.model, profile.android_release = "Galaxy S23", "13"
    ui = open_app(tmp_path, SETTINGS, profile)
    tap(ui, text="关于手机")
    shown = texts(ui)
    assert "Galaxy S23" in shown and "13" in shown and "Android 版本" in shown
    assert ui.phone.props["ro.build.id"] in shown


def test_settings_toggle_writes_the_settings_table(tmp_path: Path) -> None:
    phone = make_phone(tmp_path)
    ui = phone.ui
    ui.launch(SETTINGS)
    tap(ui, text="已连接的设备")
    before = phone.settings["global"]["bluetooth_on"]
    tap(ui, text="蓝牙")
    assert phone.settings["global"]["bluetooth_on"] != before
    assert find(ui, text="蓝牙").checked is (phone.settings["global"]["bluetooth_on"] == "1")


def test_browser_shows_url_and_no_network(tmp_path: Path) -> None:
    ui = open_app(tmp_path, BROWSER)
    tap(ui, rid=f"{BROWSER}:id/url_bar")
    ui.input_text("example.com")
    ui.key("enter")
    assert find(ui, rid=f"{BROWSER}:id/url_bar").text == "https://example.com"
    assert "无法访问此网站" in texts(ui)


def test_calendar_new_event_is_listed(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CALENDAR)
    fill_new(ui, "新建活动", "牙医", {f"{CALENDAR}:id/when": "2026-12-03 9:30"})
    assert "2026-12-03 09:30  牙医" in texts(ui)


def test_calendar_has_upcoming_sample_events_and_all_day_entries(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CALENDAR)
    events = texts_of(ui, f"{CALENDAR}:id/event_title")
    assert len(events) == 2 and events[0].endswith("10:00  项目周会")
    fill_new(ui, "新建活动", "出游", {f"{CALENDAR}:id/when": "2099-01-05"})
    assert "2099-01-05 全天  出游" in texts(ui)


def test_calculator_repeated_digit_by_text_hits_the_key(tmp_path: Path) -> None:
    ui = calculator_after(tmp_path, "11+1=")
    assert find(ui, rid=RESULT).text == "12"


def test_calculator_percent_key(tmp_path: Path) -> None:
    ui = calculator_after(tmp_path, "86×15%=")
    assert find(ui, rid=RESULT).text == "12.9"
    assert format_number(evaluate("268×15%")) == "40.2"


def test_clock_accepts_chinese_period_and_shows_12_hour_time(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CLOCK)
    fill_new(ui, "添加闹钟", "晚上9:20")
    times = texts_of(ui, f"{CLOCK}:id/digital_clock")
    assert times == ["上午7:30", "上午9:00", "下午9:20"]


def test_weather_forecast_is_deterministic_per_city(tmp_path: Path) -> None:
    ui = open_app(tmp_path, WEATHER)
    beijing = texts_of(ui, f"{WEATHER}:id/day_temp")
    tap(ui, text="杭州")
    assert find(ui, rid=f"{WEATHER}:id/city_name").text == "杭州"
    relaunch(ui, WEATHER)
    assert texts_of(ui, f"{WEATHER}:id/day_temp") == beijing
    assert any(n.text == "明天" for n in nodes(ui))


def test_clock_weekday_repeat(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CLOCK)
    tap(ui, desc="添加闹钟")
    ui.input_text("6:45")
    tap(ui, rid=f"{CLOCK}:id/repeat_weekdays")
    tap(ui, text="保存")
    rows = [n for n in nodes(ui) if n.rid == f"{CLOCK}:id/repeat_days"]
    assert [r.text for r in rows] == ["工作日", "只响一次", "只响一次"]  # sorted: 06:45, 07:30, 09:00


def test_contacts_delete_asks_first(tmp_path: Path) -> None:
    ui = open_app(tmp_path, CONTACTS)
    tap(ui, text="张伟")
    tap(ui, rid=f"{CONTACTS}:id/menu_delete")
    assert find(ui, rid="android:id/message").text == "要删除“张伟”吗?"
    tap(ui, rid="android:id/button1")
    assert "张伟" not in texts(ui) and "王芳" in texts(ui)


def test_files_long_press_then_delete_removes_folder(tmp_path: Path) -> None:
    phone = make_phone(tmp_path)
    (phone.host_path("/sdcard/AF-rm") / "inner").mkdir(parents=True)
    ui = phone.ui
    ui.launch(FILES)
    long_press(ui, text="AF-rm")
    tap(ui, rid=f"{FILES}:id/action_menu_delete")
    tap(ui, rid="android:id/button1")
    assert not phone.host_path("/sdcard/AF-rm").exists()
    assert "AF-rm" not in texts(ui)
