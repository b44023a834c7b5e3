"""Shop (`dev.agentfarm.shop`): products with prices, a detail page, and a login wall before 我的订单."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from farm.sim.apps.base import App, Bounds, Frame, ListItem, Node, button, label, row, scroll_list, split_h, title_bar
from farm.sim.apps.forms import Field, Form, list_screen, tab_bar

if TYPE_CHECKING:
    from farm.sim.ui import UiDevice

STORE = "好物旗舰店"
PRODUCTS: list[dict[str, Any]] = [
    {"id": "p1", "name": "无线蓝牙耳机", "price": "199.00", "stock": 86, "desc": "降噪,续航 30 小时"},
    {"id": "p2", "name": "保温杯 500ml", "price": "59.90", "stock": 240, "desc": "316 不锈钢,保温 12 小时"},
    {"id": "p3", "name": "机械键盘", "price": "349.00", "stock": 35, "desc": "87 键,茶轴"},
    {"id": "p4", "name": "跑步鞋", "price": "429.00", "stock": 52, "desc": "轻量缓震"},
    {"id": "p5", "name": "洗发水 750ml", "price": "39.90", "stock": 500, "desc": "控油去屑"},
    {"id": "p6", "name": "充电宝 20000mAh", "price": "129.00", "stock": 143, "desc": "双向快充 22.5W"},
    {"id": "p7", "name": "护眼台灯", "price": "89.00", "stock": 77, "desc": "无频闪,三档色温"},
    {"id": "p8", "name": "咖啡豆 1kg", "price": "118.00", "stock": 64, "desc": "中度烘焙,云南产"},
    {"id": "p9", "name": "瑜伽垫", "price": "69.00", "stock": 120, "desc": "加厚 8mm"},
    {"id": "p10", "name": "电动牙刷", "price": "159.00", "stock": 98, "desc": "声波震动,三种模式"},
]
TABS = [("home", "首页", "tab_home"), ("cart", "购物车", "tab_cart"), ("orders", "我的订单", "tab_orders")]


class ShopApp(App):
    """Tabs 首页 / 购物车 / 我的订单; 我的订单 and 立即购买 need a login the sim never grants."""

    package = "dev.agentfarm.shop"
    activity = ".MainActivity"
    activities = {"detail": ".ProductActivity", "login": ".LoginActivity", "checkout": ".CheckoutActivity"}
    page = "home"
    product: str | None = None
    after_login = "orders"

    def __init__(self, ui: UiDevice) -> None:
        super().__init__(ui)
        self.cart: list[str] = []

    @property
    def signed_in(self) -> bool:
        return self.package in self.phone.profile.signed_in

    def back(self) -> bool:
        if self.page in ("detail", "login", "checkout", "cart", "orders"):
            self.page, self.focus = ("detail" if self.page == "checkout" else "home"), None
            return True
        return False

    def go(self, page: str) -> None:
        if page == "orders" and not self.signed_in:
            self.after_login, page = "orders", "login"
            self.fields.update({"account": "", "password": "", "captcha": ""})
        self.page, self.focus = page, None

    def open_product(self, pid: str) -> None:
        self.page, self.product = "detail", pid

    def add_to_cart(self) -> None:
        if self.product:
            self.cart.append(self.product)
            self.ui.toast("已加入购物车")

    def buy(self) -> None:
        if not self.signed_in:
            self.after_login, self.page = "checkout", "login"
            return
        self.page = "checkout"

    def login(self) -> None:
        # The account is the user's: the wall only ever yields to a signed-in profile.
        if not self.fields.get("captcha"):
            self.ui.toast("请输入验证码")
        else:
            self.ui.toast("验证码错误,请重新获取")

    def submit_order(self) -> None:
        p = _product(self.product)
        orders = self.load("orders", [])
        orders.insert(0, {"product": p["name"], "amount": p["price"], "store": STORE, "time": int(time.time())})
        self.save("orders", orders)
        self.page = "orders"
        self.ui.toast("下单成功")

    # view -----------------------------------------------------------------------------------------
    def view(self, frame: Frame) -> list[Node]:
        if self.page == "detail":
            return self._detail(frame)
        if self.page == "login":
            return self._login(frame)
        if self.page == "checkout":
            return self._checkout(frame)
        tabs_row = frame.take_bottom(72)
        if self.page == "orders":
            items = [self._text_item(f"{o['product']}  ¥{o['amount']}  {o['store']}") for o in self.load("orders", [])]
            nodes = list_screen(self, frame, title_bar(self, frame, "我的订单"), "orders", items, "order_list",
                                empty="暂无订单")
        elif self.page == "cart":
            items = [self._text_item(f"{_product(pid)['name']}  ¥{_product(pid)['price']}") for pid in self.cart]
            nodes = list_screen(self, frame, title_bar(self, frame, "购物车"), "cart", items, "cart_list",
                                empty="购物车是空的")
        else:
            nodes = title_bar(self, frame, "好物商城")
            nodes.append(self.edit(frame.take(56), "search", "搜索商品", rid=self.rid("search")))
            query = self.fields.get("search", "").strip()
            shown = [p for p in PRODUCTS if query in p["name"]]
            nodes.append(scroll_list(self, "products", frame.rest(), [self._product_item(p) for p in shown],
                                     rid=self.rid("product_list")))
        return nodes + tab_bar(self, tabs_row, TABS, self.page, self.go)

    def _text_item(self, text: str) -> ListItem:
        return ListItem(64, lambda b: label((b[0] + self.ui.dp(16), b[1], b[2], b[3]), text, rid=self.rid("item")))

    def _product_item(self, p: dict[str, Any]) -> ListItem:
        def build(bounds: Bounds) -> Node:
            name_b, price_b = split_h((bounds[0] + self.ui.dp(16), bounds[1], bounds[2] - self.ui.dp(16),
                                       bounds[3]), [3, 1])
            kids = [label(name_b, p["name"], rid=self.rid("product_name")),
                    label(price_b, f"¥{p['price']}", rid=self.rid("product_price"))]
            return row(bounds, kids, lambda: self.open_product(p["id"]), rid=self.rid("product_item"))

        return ListItem(80, build)

    def _detail(self, frame: Frame) -> list[Node]:
        p = _product(self.product)
        form = Form(self, frame, title_bar(self, frame, "商品详情", self.back_home))
        form.text(56, p["name"], "detail_name")
        form.text(48, f"¥{p['price']}", "detail_price")
        form.text(40, p["desc"], "detail_desc")
        form.text(40, f"库存 {p['stock']} 件", "detail_stock")
        form.text(40, f"店铺:{STORE}", "detail_store")
        cart_b, buy_b = split_h(frame.take_bottom(72), [1, 1])
        form.add(button(cart_b, "加入购物车", self.add_to_cart, rid=self.rid("add_to_cart")))
        form.add(button(buy_b, "立即购买", self.buy, rid=self.rid("buy_now")))
        return form.nodes

    def _login(self, frame: Frame) -> list[Node]:
        form = Form(self, frame, title_bar(self, frame, "账号登录", self.back_home))
        form.text(48, "登录后查看我的订单", "login_tip")
        form.field(Field("account", "账号", "account"))
        form.field(Field("password", "密码", "password", password=True))
        code_b, get_b = split_h(frame.take(64), [2, 1])
        form.add(self.edit(code_b, "captcha", "验证码", rid=self.rid("captcha")))
        form.add(button(get_b, "获取验证码", lambda: self.ui.toast("验证码已发送"), rid=self.rid("get_code")))
        form.gap()
        form.button(64, "登录", self.login, "login")
        return form.nodes

    def _checkout(self, frame: Frame) -> list[Node]:
        p = _product(self.product)
        form = Form(self, frame, title_bar(self, frame, "确认订单", self.back_home))
        form.text(48, f"店铺:{STORE}", "checkout_store")
        form.text(48, p["name"], "checkout_name")
        form.text(48, f"合计:¥{p['price']}", "checkout_amount")
        form.add(button(frame.take_bottom(72), "提交订单", self.submit_order, rid=self.rid("submit_order")))
        return form.nodes

    def back_home(self) -> None:
        self.back()


def _product(pid: str | None) -> dict[str, Any]:
    return next((p for p in PRODUCTS if p["id"] == pid), PRODUCTS[0])
