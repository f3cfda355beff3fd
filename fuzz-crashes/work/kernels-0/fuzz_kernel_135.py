import pypto as pto

@pto.kernel
def gen(x, y, o, n):
    i = pto.get_global_id()
    if i < n:
        a = pto.load(x + i)
        b = pto.load(y + i)
        t0 = (pto.select(pto.select(b < (-7 ^ a), b, (-7 ^ a)) >= pto.select((a & a) < (a * -7), (a & a), (a * -7)), pto.select(b < (-7 ^ a), b, (-7 ^ a)), pto.select((a & a) < (a * -7), (a & a), (a * -7))) + (pto.select((b & -7) >= (b | b), (b & -7), (b | b)) * ((b + a) * pto.select(a == 3, a, 3))))
        acc = a
        for j in range(3):
            acc = acc + t0
        pto.store(o + i, acc)
