package cryptopay

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listServer serves total items (orderId "o<i>") with limit/offset paging,
// capping a page at maxPage.
func listServer(t *testing.T, mt *httpmock.MockTransport, total, maxPage int, fail map[int]int) *[]string {
	t.Helper()
	var queries []string
	mt.RegisterResponder(http.MethodGet, `=~^`+testBase+`/v1/payout/list`, func(r *http.Request) (*http.Response, error) {
		queries = append(queries, r.URL.RawQuery)
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
		if status, ok := fail[offset]; ok {
			return httpmock.NewStringResponse(status, `{"code":"boom","message":"list failed"}`), nil
		}
		if limit == 0 || limit > maxPage {
			limit = maxPage
		}
		var items []string
		for i := offset; i < total && i < offset+limit; i++ {
			items = append(items, fmt.Sprintf(`{"status":"paid","amount":"%d.5","orderId":"o%d","payCurrency":{"name":"usdt"}}`, i, i))
		}
		return httpmock.NewStringResponse(200, fmt.Sprintf(`{"payout":[%s],"count":%d}`, strings.Join(items, ","), total)), nil
	})
	return &queries
}

func TestAllPayouts(t *testing.T) {
	tests := []struct {
		name           string
		total, maxPage int
		params         ListPayoutsParams
		wantItems      int
		wantQueries    []string
	}{
		{"empty", 0, 100, ListPayoutsParams{}, 0, []string{"limit=100"}},
		{"one page", 3, 100, ListPayoutsParams{}, 3, []string{"limit=100"}},
		{"exact pages", 4, 100, ListPayoutsParams{Limit: 2}, 4, []string{"limit=2", "limit=2&offset=2"}},
		{"server caps page below limit", 5, 2, ListPayoutsParams{Limit: 10}, 5, []string{"limit=10", "limit=10&offset=2", "limit=10&offset=4"}},
		{"start at offset", 5, 100, ListPayoutsParams{Limit: 2, Offset: 3}, 2, []string{"limit=2&offset=3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, mt := setupMock(t)
			queries := listServer(t, mt, tt.total, tt.maxPage, nil)
			var got []string
			for it, err := range c.AllPayouts(context.Background(), tt.params) {
				require.NoError(t, err)
				got = append(got, it.OrderID)
			}
			assert.Len(t, got, tt.wantItems)
			for i, id := range got {
				assert.Equal(t, fmt.Sprintf("o%d", i+tt.params.Offset), id)
			}
			assert.Equal(t, tt.wantQueries, *queries)
		})
	}
}

func TestAllPayoutsBreakStopsFetching(t *testing.T) {
	c, mt := setupMock(t)
	queries := listServer(t, mt, 50, 10, nil)
	n := 0
	for _, err := range c.AllPayouts(context.Background(), ListPayoutsParams{Limit: 10}) {
		require.NoError(t, err)
		n++
		if n == 12 {
			break
		}
	}
	assert.Len(t, *queries, 2, "only the pages the loop reached")
}

func TestAllPayoutsErrorYieldedOnce(t *testing.T) {
	c, mt := setupMock(t)
	listServer(t, mt, 50, 10, map[int]int{20: 404})
	var items, errs int
	for _, err := range c.AllPayouts(context.Background(), ListPayoutsParams{Limit: 10}) {
		if err != nil {
			errs++
			assert.ErrorIs(t, err, ErrNotFound)
			continue
		}
		items++
	}
	assert.Equal(t, 20, items)
	assert.Equal(t, 1, errs)
}

func TestFindPayoutByOrderID(t *testing.T) {
	c, mt := setupMock(t)
	listServer(t, mt, 250, 100, nil)
	it, found, err := c.FindPayoutByOrderID(context.Background(), "o234")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "234.5", it.Amount.String())

	it, found, err = c.FindPayoutByOrderID(context.Background(), "missing")
	require.NoError(t, err, "not found is an answer, not an error")
	assert.False(t, found)
	assert.Nil(t, it)
}

func TestFindPayoutByOrderIDError(t *testing.T) {
	c, mt := setupMock(t)
	listServer(t, mt, 250, 100, map[int]int{100: 500})
	_, found, err := c.FindPayoutByOrderID(context.Background(), "o120")
	assert.False(t, found)
	assert.ErrorIs(t, err, ErrServer, "an error is not 'not found': the outcome stays unknown")
}
