"""Named unit constants. The core works in SI: bytes, seconds, FLOP, FLOP/s, bytes/s.

Multiply to convert into SI at the edges, divide to convert out::

    >>> 25 * GB / s == 25e9
    True
    >>> 400 * Gbit_per_s / GB_per_s
    50.0

Decimal prefixes (kB, MB, GB, TB) follow SI and vendor data sheets; binary
ones (KiB, MiB, GiB) follow IEC 80000-13. Bandwidths quoted in bits per second
(network ports) divide by 8 to give bytes per second.
"""

# bytes
B = 1.0
kB = KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15
KiB = 2.0**10
MiB = 2.0**20
GiB = 2.0**30
TiB = 2.0**40

# bits (network links are quoted in bits per second)
bit = 1.0 / 8.0
Gbit = 1e9 * bit
Tbit = 1e12 * bit

# time
s = 1.0
ms = 1e-3
us = 1e-6
ns = 1e-9
minute = 60.0
hour = 3600.0
day = 86400.0
year = 365.0 * day

# bandwidth (bytes per second)
GB_per_s = GB / s
TB_per_s = TB / s
Gbit_per_s = Gbit / s

# compute
FLOP = 1.0
GFLOPS = 1e9
TFLOPS = 1e12
PFLOPS = 1e15
PF_day = PFLOPS * day  # FLOP in one petaFLOP/s-day (Brown et al. 2020, Table D.1)

# power and energy
W = 1.0
kW = 1e3
MW = 1e6
kWh = kW * hour  # joules

# counts
thousand = 1e3
million = 1e6
billion = 1e9
trillion = 1e12
