"""Weather (`dev.agentfarm.weather`): a 7-day forecast per city, drawn deterministically from city + date."""

from __future__ import annotations

import random
from datetime import date, timedelta

from farm.sim.apps.base import App, Bounds, Frame, ListItem, Node, label, row, scroll_list, split_h, title_bar
from farm.sim.apps.forms import tab_bar

# City → (winter mean high, summer mean high) in °C.
CITIES: dict[str, tuple[int, int]] = {"北京": (3, 31), "上海": (9, 32), "杭州": (9, 33)}
SKIES = ("晴", "多云", "阴", "小雨", "晴转多云", "阵雨")
DAY_NAMES = ("今天", "明天", "后天")


def forecast(city: str, day: date) -> tuple[str, int, int]:
    """(sky, high, low) for one city and day; the same inputs always give the same weather."""
    winter, summer = CITIES.get(city, (10, 30))
    from_mid_january = abs(day.timetuple().tm_yday - 15)
    season = min(from_mid_january, 365 - from_mid_january) / 182.5  # 0 in mid-January, 1 in mid-July
    rng = random.Random(f"{city}:{day.isoformat()}")
    high = round(winter + (summer - winter) * min(season, 1.0) + rng.uniform(-3, 3))
    low = high - rng.randint(5, 10)
    return rng.choice(SKIES), high, low


class WeatherApp(App):
    """City tabs on top (北京 / 上海 / 杭州), today's conditions and a 7-day list; the city list is fixed."""

    package = "dev.agentfarm.weather"
    activity = ".MainActivity"
    city = "北京"

    def pick(self, city: str) -> None:
        self.city = city
        self.scroll.pop("days", None)

    def view(self, frame: Frame) -> list[Node]:
        nodes = title_bar(self, frame, "天气")
        nodes += tab_bar(self, frame.take(56), [(city, city, "city_tab") for city in CITIES], self.city, self.pick)
        today = self.ui.now().date()
        sky, high, low = forecast(self.city, today)
        nodes.append(label(frame.take(40), self.city, rid=self.rid("city_name")))
        nodes.append(label(frame.take(96), f"{high}°", rid=self.rid("current_temp")))
        nodes.append(label(frame.take(40), f"{sky}  最高 {high}° 最低 {low}°", rid=self.rid("today_summary")))
        items = [self._day(today + timedelta(days=i), i) for i in range(7)]
        nodes.append(scroll_list(self, "days", frame.rest(), items, rid=self.rid("forecast_list")))
        return nodes

    def _day(self, day: date, offset: int) -> ListItem:
        sky, high, low = forecast(self.city, day)
        name = DAY_NAMES[offset] if offset < len(DAY_NAMES) else f"{day.month}月{day.day}日"

        def build(bounds: Bounds) -> Node:
            cols = split_h((bounds[0] + self.ui.dp(16), bounds[1], bounds[2] - self.ui.dp(16), bounds[3]), [2, 2, 3])
            kids = [label(cols[0], name, rid=self.rid("day_name")), label(cols[1], sky, rid=self.rid("day_sky")),
                    label(cols[2], f"最高 {high}° / 最低 {low}°", rid=self.rid("day_temp"))]
            return row(bounds, kids, None, rid=self.rid("day_item"))

        return ListItem(64, build)
