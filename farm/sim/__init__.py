"""The virtual phone: a device-side adbd on loopback that the real adb server attaches."""
