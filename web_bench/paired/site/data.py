"""Seeded data generators: the visible data of every task is a pure function of (task, seed).

Changing anything here changes what the model sees, so `SUITE_VERSION` in `catalog.py` must go up.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict

_ADJECTIVES = (
    "Amber", "Birch", "Cobalt", "Dune", "Ember", "Fjord", "Granite", "Harbor", "Indigo", "Juniper",
    "Kestrel", "Lumen", "Maple", "Nimbus", "Onyx", "Pebble", "Quartz", "Russet", "Sierra", "Tundra",
)
_ROOTS = (
    "Kettle", "Lantern", "Backpack", "Notebook", "Blender", "Headlamp", "Thermos", "Skillet", "Hammock",
    "Compass", "Umbrella", "Stool", "Toaster", "Speaker", "Tripod", "Cooler", "Desk Lamp", "Wallet",
    "Teapot", "Doormat", "Planter", "Whisk", "Ladle", "Tent",
)
_CATEGORIES = ("Kitchen", "Outdoor", "Office", "Garden", "Audio", "Travel", "Lighting", "Storage")
_NOTIFICATION_TOPICS = (
    "Order updates", "Price drops", "Security alerts", "Weekly digest", "Product news",
    "Delivery reminders", "Account activity", "Event invitations", "Back in stock", "Survey requests",
)
_FIRST = ("Ada", "Bruno", "Chiara", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kaja", "Luis")
_LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Haddad", "Silva", "Kowalski", "Brennan", "Ortiz")
_SUBJECTS = (
    "my last delivery arrived damaged", "I would like to change my billing address",
    "the invoice for March is missing", "please cancel my newsletter subscription",
    "can you confirm the warranty period", "the discount code did not apply",
)
_NOTE_TITLES = (
    "Faster search", "Dark mode", "Offline sync", "Bulk export", "Team roles", "Audit log",
    "Smart filters", "Calendar view", "Keyboard shortcuts", "Custom fields", "Two-step sign-in", "Webhooks",
)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Order(_Model):
    """One order of the order history."""

    order_id: str
    """Visible order number, e.g. `A-48213`."""
    placed: str
    """Date placed (ISO date)."""
    status: str
    """Delivery status."""
    items: tuple[str, ...]
    """Item names on the order."""
    total_cents: int
    """Order total in cents (shown only on the detail page)."""


class Product(_Model):
    """A product of the inventory or the shop."""

    sku: str
    """Stock-keeping unit, e.g. `KT-4821`."""
    name: str
    """Display name; never contains the seed number."""
    category: str
    """Category it is filed under."""
    price_cents: int
    """Unit price in cents."""
    stock: int
    """Units in stock (0 = out of stock)."""


class Note(_Model):
    """One release-notes entry of the lazy-load page."""

    title: str
    """Entry title."""
    body: str
    """Entry text."""
    code: str
    """Access code printed in the entry."""


def rng_for(task: str, seed: int) -> random.Random:
    """The one random source of a task instance (string seeding is stable across processes)."""
    return random.Random(f"web-bench:{task}:{seed}")


def money(cents: int) -> str:
    """`$1,234.50` style."""
    return f"${cents // 100:,}.{cents % 100:02d}"


def orders(seed: int) -> tuple[list[Order], int]:
    """Eight orders and the index of the one the task asks about."""
    rng = rng_for("order_lookup", seed)
    ids = rng.sample(range(10000, 99999), 8)
    statuses = ("Delivered", "Shipped", "Processing", "Delivered", "Returned")
    result = []
    for n, oid in enumerate(ids):
        names = [f"{a} {r}" for a, r in zip(rng.sample(_ADJECTIVES, 2), rng.sample(_ROOTS, 2), strict=True)]
        result.append(
            Order(
                order_id=f"A-{oid}",
                placed=f"2026-{(n % 9) + 1:02d}-{rng.randint(1, 28):02d}",
                status=rng.choice(statuses),
                items=tuple(names[: rng.randint(1, 2)]),
                total_cents=rng.randint(1500, 98000),
            )
        )
    return result, rng.randrange(len(result))


def notification_topics(seed: int) -> tuple[dict[str, bool], str]:
    """Six topics with their initial switch state, and the (initially off) topic to enable."""
    rng = rng_for("notification_toggle", seed)
    topics = rng.sample(_NOTIFICATION_TOPICS, 6)
    initial = {t: rng.random() < 0.5 for t in topics}
    target = rng.choice(topics)
    initial[target] = False
    return initial, target


def contact_details(seed: int) -> tuple[str, str, str]:
    """Name, email and message the contact form must be sent with."""
    rng = rng_for("contact_form", seed)
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    email = f"{first.lower()}.{last.lower()}{rng.randint(10, 99)}@example.org"
    ref = rng.randint(1000, 9999)
    return f"{first} {last}", email, f"Hello, {rng.choice(_SUBJECTS)} (reference {ref})."


def support_note(seed: int) -> str:
    """The contact page's seeded line about the support desk."""
    rng = rng_for("contact_form:page", seed)
    return f"The {rng.choice(_ADJECTIVES)} support desk answers within {rng.randint(2, 48)} hours."


def _sku(rng: random.Random, root: str, used: set[str]) -> str:
    while True:
        sku = f"{root.replace(' ', '')[:2].upper()}-{rng.randint(1000, 9999)}"
        if sku not in used:
            used.add(sku)
            return sku


def inventory(seed: int) -> tuple[list[Product], str, str]:
    """Products of five categories, the target category and its only in-stock product's name.

    The seed varies root names, SKUs, prices and stock order; it never appears in a name.
    """
    rng = rng_for("inventory_filter", seed)
    categories = rng.sample(_CATEGORIES, 5)
    roots = rng.sample(_ROOTS, 20)
    adjectives = list(_ADJECTIVES)
    used: set[str] = set()
    products: list[Product] = []
    target_category = rng.choice(categories)
    target_name = ""
    for c, category in enumerate(categories):
        group = roots[c * 4 : c * 4 + 4]
        in_stock_at = rng.randrange(4)
        for i, root in enumerate(group):
            name = f"{rng.choice(adjectives)} {root}"
            if category == target_category:
                stock = rng.randint(3, 40) if i == in_stock_at else 0
                if i == in_stock_at:
                    target_name = name
            else:
                stock = rng.choice((0, 0, rng.randint(1, 30)))
            products.append(
                Product(sku=_sku(rng, root, used), name=name, category=category,
                        price_cents=rng.randint(900, 25000), stock=stock)
            )
    return products, target_category, target_name


def shop(seed: int) -> tuple[list[Product], str, int]:
    """Six shop products, the SKU to buy and the quantity."""
    rng = rng_for("cart_checkout", seed)
    roots = rng.sample(_ROOTS, 6)
    used: set[str] = set()
    products = [
        Product(sku=_sku(rng, root, used), name=f"{rng.choice(_ADJECTIVES)} {root}", category="Shop",
                price_cents=rng.randint(900, 25000), stock=50)
        for root in roots
    ]
    target = rng.choice(products)
    return products, target.sku, rng.randint(2, 5)


def release_notes(seed: int) -> tuple[list[Note], list[Note], str, int]:
    """Entries shown at first, entries loaded on demand, the asked-for title and the load delay (ms)."""
    rng = rng_for("lazy_load", seed)
    titles = rng.sample(_NOTE_TITLES, 6)

    def code() -> str:
        letters = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(4))
        return f"{letters}-{rng.randint(1000, 9999)}"

    notes = [Note(title=t, body=f"{t} is now available to every workspace.", code=code()) for t in titles]
    first, later = notes[:3], notes[3:]
    return first, later, rng.choice(later).title, rng.randint(300, 800)
