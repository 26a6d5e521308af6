/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The unmatched program of exec storms: does nothing, statically linked so execs are as cheap as they get. */
int main(void) {
        return 0;
}
